// One wait shared by the streaming frontends (gRPC ModelStreamInfer, HTTP generate_stream, OpenAI SSE): a
// writer that is over its high-water mark resumes on 'drain', or gives up when the peer is gone ('close').
import type { EventEmitter } from 'node:events';

/** Resolves at the stream's next 'drain' or 'close', whichever comes first, and leaves no listener behind. */
export function drainOrClose(stream: EventEmitter): Promise<void> {
  return new Promise((resolve) => {
    const settle = (): void => {
      stream.off('drain', settle);
      stream.off('close', settle);
      resolve();
    };
    stream.on('drain', settle);
    stream.on('close', settle);
  });
}
