/** The HTTP/REST frontend's public surface. */
export { createHttpFrontend, DEFAULT_BACKLOG, DEFAULT_MAX_INPUT_SIZE } from './server.js';
export { createHealthListener } from './health-listener.js';
export type { HealthListener } from './health-listener.js';
export { DEFAULT_MAX_CONNECTIONS } from './transport/connection-limits.js';
export { DEFAULT_JSON_LIMITS } from './json-pool.js';
export type { HttpFrontend, HttpFrontendOptions, HttpMount } from './server.js';
export { httpStatusOf } from './transport/errors.js';
export { createThreadedHttpFrontend, threadsRefusal } from './threads/pool.js';
