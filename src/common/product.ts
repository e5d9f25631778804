/**
 * How a client can tell this server is Nereid. GET /v2 and gRPC ServerMetadata report `--id` as the
 * server's name (Triton's default "triton", which Triton's own clients and examples expect), so the
 * product shows elsewhere: every HTTP response carries `Server: nereid/<version>` and every gRPC response
 * the `server: nereid/<version>` metadata key (docs/http.md, docs/grpc.md); the start-up log says it too.
 */
export const PRODUCT_NAME = 'nereid';

/** The package's npm name (`nereid` on npm is an unrelated package; only the command is `nereid`). */
export const PACKAGE_NAME = 'nereid-server';

/** `nereid/<version>`, the product token of the HTTP `Server` header and the gRPC `server` metadata. */
export function productToken(version: string): string {
  return `${PRODUCT_NAME}/${version}`;
}
