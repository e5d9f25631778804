/**
 * The one signal that never aborts, for requests that bring none. Shared by every layer so that a check
 * like `signal === NEVER_ABORTED` (skip adding an abort listener that can never fire) holds wherever the
 * request came from. Many requests at once may listen on it (the schedulers while a job waits, a response
 * stream until it is drained), so Node's "possible leak" warning at 10 listeners does not apply to it.
 */
import { setMaxListeners } from 'node:events';

export const NEVER_ABORTED: AbortSignal = new AbortController().signal;
setMaxListeners(0, NEVER_ABORTED);
