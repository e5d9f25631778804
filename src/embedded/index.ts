/** The in-process API (exported by the package entry, not by `nereid-server/sdk`: it brings the whole server). */
export { Nereid, NereidServer, type ModelLoadOptions } from './server.js';
export type { InferRequest } from './convert.js';
export type { ListenOptions, NereidStartOptions, SecureListenOptions, TlsListenOptions } from './options.js';
