/**
 * Shared-memory keys from clients → the one object in /dev/shm they may name. A key is a POSIX shm name
 * as shm_open takes it (leading slashes are dropped, as glibc does), never a path: no '/', no '.' or '..',
 * no control characters, at most NAME_MAX bytes. Triton's reserved prefix for its Python backend's own
 * regions is refused. Error texts follow Triton's (src/common.cc ValidateSharedMemoryKey).
 */
import { invalidArg } from '../../common/errors.js';

/** Prefixes of regions the server creates for itself; clients may not register them. */
export const RESERVED_SHM_PREFIXES: readonly string[] = ['triton_python_backend_shm_region_'];

/** Linux NAME_MAX: the longest file name /dev/shm accepts, in bytes. */
export const MAX_SHM_NAME_BYTES = 255;

/** Region names are map keys echoed in messages; bound them so a client cannot make them huge. */
export const MAX_REGION_NAME_LENGTH = 1024;

const SHOWN_LIMIT = 200;

/**
 * A client string made safe to put in a message or a log line: control characters escaped, long values
 * cut. Plain keys and names come out unchanged, so messages match Triton's.
 */
export function shown(value: string): string {
  const cut = value.length > SHOWN_LIMIT ? value.slice(0, SHOWN_LIMIT) + '...' : value;
  return cut.replace(/[\u0000-\u001f\u007f]/g, (c) => '\\x' + c.charCodeAt(0).toString(16).padStart(2, '0'));
}

function invalidKey(name: string, key: string, why?: string): never {
  const reason = why === undefined ? '' : `: ${why}`;
  throw invalidArg(
    `cannot register shared memory region '${shown(name)}' - invalid shm key '${shown(key)}'${reason}`,
  );
}

/**
 * Validates `key` for region `name` and returns the object's name inside /dev/shm (without slashes).
 * Throws INVALID_ARG with Triton's wording.
 */
export function shmObjectName(name: string, key: string): string {
  let start = 0;
  while (start < key.length && key.charCodeAt(start) === 0x2f) start++;
  const object = key.slice(start);
  if (object.length === 0) invalidKey(name, key);
  for (const prefix of RESERVED_SHM_PREFIXES) {
    if (object.startsWith(prefix)) {
      throw invalidArg(
        `cannot register shared memory region '${shown(name)}' with key '${shown(key)}' as the key ` +
          `contains the reserved prefix '${prefix}'`,
      );
    }
  }
  if (object.includes('/')) invalidKey(name, key, "a key names one object, it may not contain '/'");
  if (object === '.' || object === '..') invalidKey(name, key, "'.' and '..' are not shared memory objects");
  if (/[\u0000-\u001f\u007f]/.test(object)) invalidKey(name, key, 'control characters are not allowed');
  if (/\p{Cs}/u.test(object)) invalidKey(name, key, 'not valid Unicode');
  if (Buffer.byteLength(object, 'utf8') > MAX_SHM_NAME_BYTES) {
    invalidKey(name, key, `longer than ${MAX_SHM_NAME_BYTES} bytes`);
  }
  return object;
}
