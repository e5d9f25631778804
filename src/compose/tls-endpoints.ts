/**
 * Which endpoints serve TLS, from ServerOptions: the gRPC port (`--grpc-use-ssl*`, as Triton) and the HTTP
 * port (`--http-use-ssl*`, Nereid only). Their certificates are read and checked here, at start-up, with
 * errors that name the flag and the file; the credentials then follow their files (frontends/tls.ts).
 */
import type { Logger } from '../common/logger.js';
import { TlsCredentials } from '../frontends/tls.js';
import type { ServerOptions } from './options.js';

export type TlsEndpoint = 'grpc' | 'http';

/** The credentials of each endpoint that serves TLS. */
export class EndpointTls {
  private constructor(readonly byEndpoint: ReadonlyMap<TlsEndpoint, TlsCredentials>) {}

  /** Reads and checks every endpoint's files; throws INVALID_ARG naming the flag and the file. */
  static async load(options: ServerOptions, log: Logger): Promise<EndpointTls> {
    const loaded = new Map<TlsEndpoint, TlsCredentials>();
    const wanted: [TlsEndpoint, boolean][] = [
      ['grpc', options.allowGrpc && options.grpcUseSsl],
      ['http', options.allowHttp && options.httpUseSsl],
    ];
    try {
      for (const [endpoint, on] of wanted) {
        if (!on) continue;
        const p = endpoint;
        const grpc = endpoint === 'grpc';
        loaded.set(
          endpoint,
          await TlsCredentials.load({
            files: {
              certFile: grpc ? options.grpcServerCert : options.httpServerCert,
              keyFile: grpc ? options.grpcServerKey : options.httpServerKey,
              rootCertFile: grpc ? options.grpcRootCert : options.httpRootCert,
              mutual: grpc ? options.grpcUseSslMutual : options.httpUseSslMutual,
            },
            names: { cert: `--${p}-server-cert`, key: `--${p}-server-key`, rootCert: `--${p}-root-cert` },
            label: grpc ? 'GRPC' : 'HTTP',
            log,
            pollIntervalMs: options.tlsCertPollMs,
          }),
        );
      }
    } catch (err) {
      for (const credentials of loaded.values()) credentials.close();
      throw err;
    }
    return new EndpointTls(loaded);
  }

  get(endpoint: TlsEndpoint): TlsCredentials | undefined {
    return this.byEndpoint.get(endpoint);
  }

  /** Re-reads every endpoint's files (SIGHUP); each result is logged by the credentials. */
  async reload(why: string): Promise<{ endpoint: TlsEndpoint; reloaded: boolean }[]> {
    const results = [];
    for (const [endpoint, credentials] of this.byEndpoint) {
      results.push({ endpoint, reloaded: await credentials.reload(why) });
    }
    return results;
  }

  /** Stops following the files. */
  close(): void {
    for (const credentials of this.byEndpoint.values()) credentials.close();
  }
}
