/** The system shared-memory extension of the core: the region registry and per-request resolution. */
export {
  CLIENT_SHM_DISABLED,
  DEFAULT_MAX_REGIONS,
  SystemSharedMemoryManager,
  type SharedMemoryManagerOptions,
  type ShmSlice,
} from './manager.js';
export { inferWithSharedMemory, prepareShmRequest, usesSharedMemory, type ShmRequest } from './request.js';
export { RESERVED_SHM_PREFIXES, shmObjectName } from './key.js';
export { CUDA_IPC_HANDLE_BYTES, CudaSharedMemory } from './cuda.js';
