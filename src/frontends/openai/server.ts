/**
 * The OpenAI-compatible API on a port of its own (--openai-port), for when it should not share the HTTP
 * port: the same handler (handler.ts), every other path a 404 in OpenAI's error shape. close() stops
 * accepting and lets in-flight requests (streams included) finish.
 */
import type { InferenceServerApi } from '../../core/index.js';
import { createHttpServer } from '../http/transport/tls.js';
import { listen } from '../listen.js';
import type { TlsCredentials } from '../tls.js';
import { openAiErrorJson } from './errors.js';
import { createOpenAiHandler, isOpenAiPath, type OpenAiOptions } from './handler.js';

export interface OpenAiServerOptions extends OpenAiOptions {
  readonly address: string;
  readonly port: number;
  readonly tls?: TlsCredentials;
}

export interface OpenAiServer {
  listen(): Promise<{ address: string; port: number }>;
  close(): Promise<void>;
}

export function createOpenAiServer(api: InferenceServerApi, options: OpenAiServerOptions): OpenAiServer {
  const handler = createOpenAiHandler(api, options);
  const server = createHttpServer(
    { noDelay: true, keepAliveTimeout: 60_000 },
    (req, res) => {
      const url = req.url ?? '/';
      const q = url.indexOf('?');
      const path = q === -1 ? url : url.slice(0, q);
      if (isOpenAiPath(path)) {
        handler(req, res, path);
        return;
      }
      const body = openAiErrorJson(
        `Unknown endpoint ${req.method ?? ''} ${path}`,
        'invalid_request_error',
        null,
        'unknown_url',
      );
      res.writeHead(404, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
      res.end(body);
    },
    options.tls,
  );
  return {
    listen: () => listen(server, 'OpenAI', options, options.log),
    close: () =>
      new Promise<void>((resolve) => {
        if (!server.listening) {
          resolve();
          return;
        }
        server.close(() => resolve());
        server.closeIdleConnections();
      }),
  };
}
