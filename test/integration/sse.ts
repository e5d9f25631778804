/**
 * A small Server-Sent Events reader for the generate_stream tests: POSTs a JSON body with fetch and
 * yields each `data:` event as it arrives, with its arrival time, so tests can see responses spaced in
 * time rather than only their final list.
 */
export interface SseEvent {
  readonly data: Record<string, unknown>;
  /** performance.now() when the event was complete. */
  readonly at: number;
}

export interface SseResponse {
  readonly status: number;
  readonly headers: Headers;
  /** Every event, then the end of the body. */
  events(): AsyncGenerator<SseEvent>;
  /** The raw body text (for non-SSE answers); do not mix with events(). */
  text(): Promise<string>;
}

export async function postSse(url: string, body: unknown, signal?: AbortSignal): Promise<SseResponse> {
  const res = await fetch(url, {
    method: 'POST',
    body: typeof body === 'string' ? body : JSON.stringify(body),
    signal,
  });
  return {
    status: res.status,
    headers: res.headers,
    text: () => res.text(),
    async *events() {
      const body = res.body as unknown as AsyncIterable<Uint8Array>;
      const decoder = new TextDecoder();
      let pending = '';
      for await (const value of body) {
        pending += decoder.decode(value, { stream: true });
        let end: number;
        while ((end = pending.indexOf('\n\n')) >= 0) {
          const chunk = pending.slice(0, end);
          pending = pending.slice(end + 2);
          if (!chunk.startsWith('data: ')) throw new Error(`malformed SSE event: ${JSON.stringify(chunk)}`);
          yield { data: JSON.parse(chunk.slice(6)) as Record<string, unknown>, at: performance.now() };
        }
      }
      if (pending !== '') throw new Error(`SSE body ends inside an event: ${JSON.stringify(pending)}`);
    },
  };
}

export async function collect(res: SseResponse): Promise<SseEvent[]> {
  const out: SseEvent[] = [];
  for await (const e of res.events()) out.push(e);
  return out;
}
