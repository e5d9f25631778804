/**
 * Triton's small test backends, built in and registered under Triton's backend names (`repeat`, `square`,
 * `identity`) so Triton's own configs (repeat_int32, square_int32, custom_zero_1_float32, ...) load
 * unchanged. They need no model file, only the version folder, and run on timers, never on the CPU.
 */
import type { Backend } from '../../backend-api/backend.js';
import { IdentityBackend } from './identity.js';
import { RepeatBackend } from './repeat.js';
import { SquareBackend } from './square.js';

export { IdentityBackend, validateIdentityConfig } from './identity.js';
export { RepeatBackend, validateRepeatConfig } from './repeat.js';
export { SquareBackend, squareSettings, validateSquareConfig, type SquareSettings } from './square.js';

/** One instance of each builtin test backend. */
export function builtinTestBackends(): Backend[] {
  return [new RepeatBackend(), new SquareBackend(), new IdentityBackend()];
}
