/** Small file-system helpers shared across layers. */
import { stat } from 'node:fs/promises';

/** True when `p` exists (following symlinks); false on any error. */
export async function pathExists(p: string): Promise<boolean> {
  try {
    await stat(p);
    return true;
  } catch {
    return false;
  }
}
