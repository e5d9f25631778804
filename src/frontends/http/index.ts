/** The HTTP/REST frontend's public surface. */
export { createHttpFrontend, DEFAULT_MAX_INPUT_SIZE } from './server.js';
export type { HttpFrontend, HttpFrontendOptions } from './server.js';
export { httpStatusOf } from './errors.js';
