/**
 * Log probs from the model's `logprobs` output (the llamacpp backend's JSON, one entry per generated
 * token: `{id, token, logprob, top: [{id, token, logprob}]}`) in OpenAI's two shapes: chat's
 * `{content: [{token, logprob, bytes, top_logprobs}]}` and the legacy completions'
 * `{tokens, token_logprobs, top_logprobs, text_offset}`.
 */
export interface ModelLogprob {
  readonly token: string;
  readonly logprob: number;
  readonly top: readonly { readonly token: string; readonly logprob: number }[];
}

/** The entries of one response's `logprobs` text; anything malformed is none. */
export function parseModelLogprobs(text: string): ModelLogprob[] {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return [];
  }
  if (!Array.isArray(doc)) return [];
  const out: ModelLogprob[] = [];
  for (const e of doc) {
    const d = e as { token?: unknown; logprob?: unknown; top?: unknown };
    if (typeof d.token !== 'string' || typeof d.logprob !== 'number') continue;
    const top = Array.isArray(d.top)
      ? d.top.filter(
          (t): t is { token: string; logprob: number } =>
            typeof (t as { token?: unknown }).token === 'string' &&
            typeof (t as { logprob?: unknown }).logprob === 'number',
        )
      : [];
    out.push({
      token: d.token,
      logprob: d.logprob,
      top: top.map((t) => ({ token: t.token, logprob: t.logprob })),
    });
  }
  return out;
}

const bytesOf = (token: string): number[] => [...Buffer.from(token, 'utf8')];

/** Chat's `logprobs` object for these tokens. */
export function chatLogprobs(entries: readonly ModelLogprob[], top: number): Record<string, unknown> {
  return {
    content: entries.map((e) => ({
      token: e.token,
      logprob: e.logprob,
      bytes: bytesOf(e.token),
      top_logprobs: e.top
        .slice(0, top)
        .map((t) => ({ token: t.token, logprob: t.logprob, bytes: bytesOf(t.token) })),
    })),
  };
}

/** Completions' `logprobs` object; `offset` is where the first token's text starts in the choice text. */
export function completionLogprobs(
  entries: readonly ModelLogprob[],
  top: number,
  offset: number,
): Record<string, unknown> {
  const textOffset: number[] = [];
  let at = offset;
  for (const e of entries) {
    textOffset.push(at);
    at += e.token.length;
  }
  return {
    tokens: entries.map((e) => e.token),
    token_logprobs: entries.map((e) => e.logprob),
    top_logprobs: entries.map((e) =>
      Object.fromEntries(e.top.slice(0, top).map((t) => [t.token, t.logprob])),
    ),
    text_offset: textOffset,
  };
}
