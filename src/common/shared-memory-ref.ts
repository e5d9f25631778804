/**
 * A tensor's bytes placed in a registered shared-memory region instead of the request or response body
 * (the shared-memory extensions): the core reads and writes them, the client names them. Written once here.
 */
export interface SharedMemoryRef {
  readonly region: string;
  readonly offset: number;
  readonly byteSize: number;
}
