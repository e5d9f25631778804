/**
 * The CUDA shared-memory extension on a server without GPUs, answered as Triton answers it on a machine
 * without one (its GPU build, Triton 2.51, checked by test/differential/test_diff_shared_memory.py): no
 * CUDA region can ever be registered, so status lists none and unregistering (one region or all) succeeds
 * with nothing to do; only registering needs a GPU and is refused. Region names share one namespace with
 * system shared memory (Triton's SharedMemoryManager keeps both in one map), so a system region's name is
 * reported as such. Like system shared memory, register and unregister need --allow-client-shm=true (the
 * newer Triton's rule); status stays readable.
 */
import { alreadyExists, invalidArg, notFound } from '../../common/errors.js';
import type { CudaSharedMemoryRegionStatus } from '../types.js';
import { shown } from './key.js';
import type { SystemSharedMemoryManager } from './manager.js';

/** Size of a cudaIpcMemHandle_t, the register request's raw handle. */
export const CUDA_IPC_HANDLE_BYTES = 64;

export class CudaSharedMemory {
  constructor(private readonly system: SystemSharedMemoryManager) {}

  /** Every CUDA region (there are none), or the one named: NOT_FOUND with Triton's texts. */
  status(name?: string): CudaSharedMemoryRegionStatus[] {
    if (name === undefined || name === '') return [];
    if (this.system.has(name)) {
      throw notFound(
        `The region named '${shown(name)}' is registered as system shared memory, not CUDA shared memory`,
      );
    }
    throw notFound(`Unable to find cuda shared memory region: '${shown(name)}'`);
  }

  /**
   * Always refused: a name already taken is ALREADY_EXISTS as in Triton; otherwise INVALID_ARG. Triton's
   * GPU build answers "failed to register shared memory region: invalid args" there (the CUDA driver's
   * reason only goes to its log); Nereid says why, with the words of Triton's build without GPU support.
   */
  register(name: string): never {
    this.system.requireAllowed();
    if (name === '') throw invalidArg("'region name' is necessary to register cuda shared memory region");
    if (this.system.has(name)) {
      throw alreadyExists(`shared memory region '${shown(name)}' already in manager`);
    }
    throw invalidArg(`failed to register CUDA shared memory region: '${shown(name)}', GPUs not supported`);
  }

  /** name undefined or '' = every CUDA region; none is ever registered, so there is nothing to do. */
  unregister(): void {
    this.system.requireAllowed();
  }
}
