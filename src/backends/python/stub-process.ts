/**
 * One Python stub process: spawned with its control socket as fd 3 (a Unix socket pair libuv makes for an
 * extra 'pipe' stdio slot) and, when /dev/shm is usable, its two shared-memory files as fds 4 and 5. The
 * model's stdout and stderr are forwarded to the log line by line, so a print() can never corrupt the
 * protocol; lines are capped and rate-limited (output-lines.ts), so no output can exhaust memory or the log. Replies the host waits for (INIT_DONE, AUTOCOMPLETE_DONE, FINALIZE_DONE) are bounded by the
 * stub timeout; every other frame goes to the owner's handler. When the process exits, every waiter
 * fails with the reason (exit code or signal, the stub's own FATAL message, the tail of its stderr).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type { Socket } from 'node:net';
import { NereidError, internal } from '../../common/errors.js';
import type { Logger } from '../../common/logger.js';
import { encodeFrame, FrameDecoder, type Frame } from './frames.js';
import { STUB_SCRIPT, type Interpreter } from './interpreter.js';
import { BoundedLineSplitter, LineRateLimit } from './output-lines.js';
import {
  BINARY_HEADERS,
  MessageType,
  decode,
  type HostMessageType,
  type Incoming,
  type JsonStubMessageType,
  type Messages,
  type StubMessageType,
} from './protocol.js';
import { StubShmFiles, type ShmFileOptions } from './shm.js';

/** Control frames bigger than this are refused (tensors that large belong in /dev/shm or are hostile). */
const MAX_FRAME = 0x7fffffff;
const STDERR_TAIL_LINES = 20;
/** How long an exited stub's socket may stay open before the exit is handled anyway. */
const EXIT_DRAIN_MS = 1000;

export interface StubLaunchOptions {
  /** The instance name (`<model>_<group>_<index>`), or a label for the auto-complete stub. */
  readonly name: string;
  readonly interpreter: Interpreter;
  /** Shared-memory file settings; undefined = every tensor inline. */
  readonly shm: ShmFileOptions | undefined;
  readonly log: Logger;
}

interface Waiter {
  readonly resolve: (frame: Frame) => void;
  readonly reject: (err: NereidError) => void;
  readonly timer: NodeJS.Timeout;
}

export class StubProcess {
  readonly name: string;
  readonly files: StubShmFiles | undefined;
  /** Frames nobody waits for (responses, BLS requests, logs). */
  onFrame: ((frame: Frame) => void) | undefined;
  private readonly child: ChildProcess;
  private readonly socket: Socket;
  private readonly decoder = new FrameDecoder(MAX_FRAME, BINARY_HEADERS);
  private readonly waiters = new Map<number, Waiter>();
  private readonly exitListeners: ((reason: string, expected: boolean) => void)[] = [];
  private readonly stderrTail: string[] = [];
  private fatal: string | undefined;
  private exitReason: string | undefined;
  private stopping = false;
  readonly exited: Promise<string>;

  private constructor(options: StubLaunchOptions) {
    this.name = options.name;
    const log = options.log;
    this.files = options.shm ? StubShmFiles.create(options.shm, log, options.name) : undefined;
    const args = [STUB_SCRIPT, options.name, ...(this.files ? ['--shm'] : [])];
    let child: ChildProcess;
    try {
      child = spawn(options.interpreter.executable, args, {
        stdio: ['ignore', 'pipe', 'pipe', 'pipe', ...(this.files ? this.files.fds : [])],
        env: {
          ...process.env,
          ...options.interpreter.env,
          PYTHONUNBUFFERED: '1',
          // No bytecode written next to model.py: a __pycache__ appearing in the model's folder would change
          // it and make poll mode reload the model. (Installed packages keep their own compiled files.)
          ...(process.env.PYTHONPYCACHEPREFIX === undefined ? { PYTHONDONTWRITEBYTECODE: '1' } : {}),
        },
      });
    } finally {
      // The stub inherited the descriptors (or failed to start): the names are no longer needed.
      this.files?.unlink();
    }
    this.child = child;
    this.socket = child.stdio[3] as Socket;
    let resolveExit: (reason: string) => void = () => undefined;
    this.exited = new Promise((r) => (resolveExit = r));

    child.on('error', (err: NodeJS.ErrnoException) => {
      const hint = err.code === 'ENOENT' ? ` ('${options.interpreter.executable}' was not found)` : '';
      this.fatal ??= `unable to start the Python stub with '${options.interpreter.executable}' (${options.interpreter.origin}): ${err.code ?? err.message}${hint}`;
      // 'exit' does not follow a failed spawn.
      if (child.pid === undefined) this.onExit(resolveExit, null, null);
    });
    // 'exit' can come before the socket has delivered the stub's last frames (an INIT_DONE carrying
    // initialize()'s error, written just before the stub exits): the exit is handled once the socket has
    // ended too, or after EXIT_DRAIN_MS when something else keeps it open (a child the stub started).
    let socketEnded = false;
    let pendingExit: (() => void) | undefined;
    const socketDone = (): void => {
      socketEnded = true;
      pendingExit?.();
    };
    this.socket.once('end', socketDone);
    this.socket.once('close', socketDone);
    child.on('exit', (code, signal) => {
      if (socketEnded) {
        this.onExit(resolveExit, code, signal);
        return;
      }
      const drain = setTimeout(() => pendingExit?.(), EXIT_DRAIN_MS);
      pendingExit = () => {
        pendingExit = undefined;
        clearTimeout(drain);
        this.onExit(resolveExit, code, signal);
      };
    });
    this.socket.on('data', (chunk: Buffer) => this.onData(chunk));
    this.socket.on('error', () => undefined); // the exit handler reports; a reset socket says nothing new
    // One rate limit for both streams: the log takes so many lines a second from one stub.
    const limit = new LineRateLimit((line) => log.info(line));
    this.forward(child, 'stdout', limit, (line) => limit.line(`${this.name}: ${line}`));
    this.forward(child, 'stderr', limit, (line) => {
      this.stderrTail.push(line);
      if (this.stderrTail.length > STDERR_TAIL_LINES) this.stderrTail.shift();
      limit.line(`${this.name} (stderr): ${line}`);
    });
  }

  /** Starts a stub; its first reply is awaited by the caller with call(). */
  static launch(options: StubLaunchOptions): StubProcess {
    return new StubProcess(options);
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get alive(): boolean {
    return this.exitReason === undefined;
  }

  /** Called once when the process is gone; `expected` is true after stop()/kill(). */
  onExitOnce(listener: (reason: string, expected: boolean) => void): void {
    if (this.exitReason !== undefined) listener(this.exitReason, this.stopping);
    else this.exitListeners.push(listener);
  }

  send<T extends HostMessageType>(type: T, message: Messages[T], blobs: readonly Buffer[] = []): void {
    if (!this.alive) return;
    const parts = encodeFrame(type, message, blobs);
    // Every frame written in this turn of the event loop goes out in one writev (several pipelined
    // batches, a batch and a FREE of output space): the stub wakes once and reads them in one recv.
    if (!this.corked) {
      this.corked = true;
      this.socket.cork();
      process.nextTick(this.uncork);
    }
    for (const p of parts) this.socket.write(p);
  }

  private corked = false;
  private readonly uncork = (): void => {
    this.corked = false;
    this.socket.uncork();
  };

  /**
   * Sends a command and waits for its reply, decoded (bounded by `timeoutMs`; the stub is killed on
   * timeout).
   */
  async call<T extends HostMessageType, R extends JsonStubMessageType>(
    type: T,
    message: Messages[T],
    replyType: R,
    timeoutMs: number,
    what: string,
  ): Promise<Incoming[R]> {
    const reply = await this.reply(type, message, replyType, timeoutMs, what);
    return decode[replyType](reply.header);
  }

  private reply<T extends HostMessageType>(
    type: T,
    message: Messages[T],
    replyType: StubMessageType,
    timeoutMs: number,
    what: string,
  ): Promise<Frame> {
    return new Promise<Frame>((resolve, reject) => {
      if (!this.alive) {
        reject(this.deadError(what));
        return;
      }
      const timer = setTimeout(() => {
        this.waiters.delete(replyType);
        reject(
          internal(
            `Python stub '${this.name}' did not finish ${what} within ${timeoutMs / 1000} s; it was stopped. ` +
              `Raise --backend-config=python,stub-timeout-seconds=<seconds> if the model needs longer.`,
          ),
        );
        this.kill();
      }, timeoutMs);
      this.waiters.set(replyType, { resolve, reject, timer });
      this.send(type, message);
    });
  }

  /** Asks the stub to finalize and exit; kills it if it has not exited within `timeoutMs`. */
  async stop(timeoutMs: number): Promise<void> {
    if (!this.alive) return;
    this.stopping = true;
    const timer = setTimeout(() => this.kill(), timeoutMs);
    this.send(MessageType.Finalize, {});
    await this.exited;
    clearTimeout(timer);
  }

  kill(): void {
    this.stopping = true;
    if (this.alive) this.child.kill('SIGKILL');
  }

  /**
   * Kills a stub that must not go on (hung, over its memory limit): unlike kill(), its exit counts as
   * unexpected, so the owner fails what it held and starts a new one; `reason` is how describeExit()
   * explains it.
   */
  terminate(reason: string): void {
    if (!this.alive) return;
    this.fatal ??= reason;
    this.child.kill('SIGKILL');
  }

  /** Why the process ended, with what it said on the way out. */
  describeExit(): string {
    const reason = this.exitReason ?? 'is running';
    const tail = this.stderrTail.length > 0 ? `; its last stderr lines:\n${this.stderrTail.join('\n')}` : '';
    return this.fatal && reason !== this.fatal ? `${this.fatal} (${reason})` : `${reason}${tail}`;
  }

  private deadError(what: string): NereidError {
    return internal(`Python stub '${this.name}' ended before ${what}: ${this.describeExit()}`);
  }

  private forward(
    child: ChildProcess,
    stream: 'stdout' | 'stderr',
    limit: LineRateLimit,
    sink: (line: string) => void,
  ): void {
    const input = child[stream];
    if (!input) return;
    const splitter = new BoundedLineSplitter(sink);
    input.on('data', (chunk: Buffer) => splitter.push(chunk));
    input.on('end', () => {
      splitter.end();
      limit.flush();
    });
    input.on('error', () => undefined); // the exit handler reports
  }

  /**
   * Stops taking frames from the stub (back-pressure: a response stream is full). The frames already
   * read stay undecoded and the socket is paused, so the stub's next send blocks once the socket buffer
   * is full: the model waits instead of the host buffering its answers. resumeReading() goes on.
   */
  pauseReading(): void {
    if (this.readingPaused) return;
    this.readingPaused = true;
    this.socket.pause();
  }

  resumeReading(): void {
    if (!this.readingPaused) return;
    this.readingPaused = false;
    this.drainFrames();
    if (!this.readingPaused && this.alive) this.socket.resume();
  }

  /** Reading is paused by pauseReading() (the owner's timers do not count this as the stub's silence). */
  get isReadingPaused(): boolean {
    return this.readingPaused;
  }

  private readingPaused = false;

  private onData(chunk: Buffer): void {
    this.decoder.append(chunk);
    this.drainFrames();
  }

  /** Handles buffered frames one by one until none is whole or the owner paused reading. */
  private drainFrames(): void {
    while (!this.readingPaused) {
      let frame: Frame | undefined;
      try {
        frame = this.decoder.next();
      } catch (err) {
        this.fatal ??= `protocol error: ${err instanceof Error ? err.message : String(err)}`;
        this.child.kill('SIGKILL');
        return;
      }
      if (frame === undefined) return;
      if (frame.type === MessageType.Fatal) {
        this.fatal = decode[MessageType.Fatal](frame.header).message ?? 'the stub reported a fatal error';
        continue;
      }
      const waiter = this.waiters.get(frame.type);
      if (waiter) {
        this.waiters.delete(frame.type);
        clearTimeout(waiter.timer);
        waiter.resolve(frame);
        continue;
      }
      this.onFrame?.(frame);
    }
  }

  private onExit(
    resolve: (reason: string) => void,
    code: number | null,
    signal: NodeJS.Signals | null,
  ): void {
    if (this.exitReason !== undefined) return;
    this.exitReason =
      this.fatal ??
      (signal
        ? `the stub process was killed by ${signal}`
        : `the stub process exited with code ${code ?? '?'}`);
    for (const [, w] of this.waiters) {
      clearTimeout(w.timer);
      w.reject(this.deadError('answering'));
    }
    this.waiters.clear();
    this.socket.destroy();
    this.files?.close();
    resolve(this.exitReason);
    for (const l of this.exitListeners.splice(0)) l(this.exitReason, this.stopping);
  }
}
