/**
 * Tokens to text, the one way this backend does it: the text some tokens add after a few tokens before
 * them (textAfter), and a generation's text token by token at a cost that does not grow with its length
 * (TokenText).
 *
 * A token's text depends on the tokens before it: SentencePiece drops the leading space of the first
 * token detokenized, and a character of several UTF-8 bytes can be split over tokens (each piece reads as
 * U+FFFD alone). So a token's text is read as the difference between the text of a short window of tokens
 * before it with it and without it; the window is what node-llama-cpp keeps for the same purpose (three
 * tokens), never the whole output. A character split over tokens is held back until its last byte comes
 * and then given whole; bytes that cannot become a character within MAX_SPLIT tokens are not one, and
 * read as U+FFFD, as they do in the whole text.
 */
import type { Token } from 'node-llama-cpp';

/** llama.cpp's detokenizer: the text of a run of tokens, read as if it began the text. */
export type Detokenize = (tokens: readonly Token[]) => string;

/** Tokens before the new ones that a token's text is read after (node-llama-cpp's own window). */
export const CONTEXT_TOKENS = 3;

/** Tokens one character can be split over: UTF-8 has at most 4 bytes a character, a token at least one. */
export const MAX_SPLIT = 4;

const REPLACEMENT = 0xfffd;

/** U+FFFD characters at the end of `text`: an incomplete character reads as those. */
function trailingReplacements(text: string): number {
  let n = 0;
  while (n < text.length && text.charCodeAt(text.length - 1 - n) === REPLACEMENT) n++;
  return n;
}

/**
 * The text `tokens` add after `context`: both detokenized together, less the context's text. When the
 * detokenizer does not read the context the same way with them after it (a spacing rule of its own), the
 * tokens' text alone, as node-llama-cpp does.
 */
export function textAfter(
  detokenize: Detokenize,
  context: readonly Token[],
  tokens: readonly Token[],
): string {
  if (tokens.length === 0) return '';
  if (context.length === 0) return detokenize(tokens);
  const before = detokenize(context);
  const all = detokenize([...context, ...tokens]);
  return all.startsWith(before) ? all.slice(before.length) : detokenize(tokens);
}

/**
 * One generation's text, token by token. push() returns the text that is complete with that token; the
 * pieces together are the text of every token detokenized at once. However long the generation is, a
 * push detokenizes 2 × CONTEXT_TOKENS + 1 tokens when no character is split, and never more than
 * 4 × CONTEXT_TOKENS + 2 × MAX_SPLIT + 1.
 */
export class TokenText {
  /** The last tokens whose text is all given out: what the next ones are read after. */
  private context: Token[] = [];
  /** Tokens after those, whose text is given out up to `sent` characters (the rest is a split character). */
  private pending: Token[] = [];
  private sent = 0;

  constructor(private readonly detokenize: Detokenize) {}

  /** Adds the next token; returns the text it completes ('' while a split character is incomplete). */
  push(token: Token): string {
    this.pending.push(token);
    const text = textAfter(this.detokenize, this.context, this.pending);
    const held = trailingReplacements(text);
    let out = text.length - held > this.sent ? text.slice(this.sent, text.length - held) : '';
    this.sent = Math.max(this.sent, text.length - held);
    if (held === 0) {
      this.settle(this.pending.length);
    } else if (this.pending.length > MAX_SPLIT) {
      // The bytes of the tokens before the last MAX_SPLIT cannot become part of a character any more:
      // their U+FFFD are final. Those tokens join the context; the last ones stay pending.
      this.settle(this.pending.length - MAX_SPLIT);
      const rest = textAfter(this.detokenize, this.context, this.pending);
      const stillHeld = trailingReplacements(rest);
      out += String.fromCharCode(REPLACEMENT).repeat(Math.max(0, held - stillHeld));
      this.sent = rest.length - stillHeld;
    }
    return out;
  }

  /** The generation ended: what is held back is given out as it reads (an incomplete character as U+FFFD). */
  flush(): string {
    const text = textAfter(this.detokenize, this.context, this.pending);
    const out = text.slice(this.sent);
    this.settle(this.pending.length);
    return out;
  }

  /** The first `n` pending tokens' text is all given out: they become the context. */
  private settle(n: number): void {
    this.context = [...this.context, ...this.pending.slice(0, n)].slice(-CONTEXT_TOKENS);
    this.pending = this.pending.slice(n);
    this.sent = 0;
  }
}
