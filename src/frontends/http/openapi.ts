/**
 * The API's own description: docs/openapi.yaml (OpenAPI 3.1, written for Nereid from the KServe v2 and
 * Triton protocol documents), shipped with the package and served as it is at GET /openapi.yaml, so tools
 * (schemathesis, Swagger UI, client generators) can read it from a running server.
 */
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { internal } from '../../common/errors.js';

/** docs/openapi.yaml in the package (this file runs from dist/src/frontends/http/). */
export const OPENAPI_FILE = fileURLToPath(new URL('../../../../docs/openapi.yaml', import.meta.url));

export const OPENAPI_PATH = '/openapi.yaml';

let document: Promise<Buffer> | undefined;

/** The document's bytes, read once. */
export function openApiDocument(): Promise<Buffer> {
  document ??= readFile(OPENAPI_FILE).catch((err: unknown) => {
    document = undefined;
    throw internal(`the OpenAPI document is missing from this installation (${OPENAPI_FILE})`, err);
  });
  return document;
}
