/**
 * `nereid` — a tritonserver-compatible command line. Parses flags, starts the server, and on SIGINT or
 * SIGTERM turns not-ready, keeps serving for --exit-delay-secs, then stops accepting, lets in-flight
 * requests finish (at most --exit-timeout-secs) and exits 0. A second signal ends the process at once (one
 * more than a second after the first: under npm start one Ctrl-C arrives twice). SIGHUP
 * re-reads the TLS certificates and does nothing else (it never stops the server, unlike in tritonserver,
 * which has no handler for it). A signal during the start stops the server once it has started. Started by
 * npm (`npm start`, `npx nereid`), it also stops that way when the process that started it exits
 * (parent-watch.ts).
 *
 * `nereid init ...` (the first argument only: the server's own flags are tritonserver's, which has no
 * subcommands) scaffolds a model folder instead (init.ts); `nereid backends list|install NAME` lists and
 * installs the Python-based backends' packages (backends.ts).
 */
import { createWriteStream } from 'node:fs';
import { NereidError } from '../common/errors.js';
import { Logger } from '../common/logger.js';
import { packageVersion, startNereid } from '../compose/compose.js';
import { helpText, parseFlags } from '../compose/flags.js';
import { cloudStorageFromEnv, isObjectStoreUrl } from '../compose/storage-env.js';
import { runBackends } from './backends.js';
import { runInit } from './init.js';
import { startedByNpm, watchParent } from './parent-watch.js';

/** A second SIGINT/SIGTERM this soon after the first is the same stop request delivered twice (npm start). */
const SAME_SIGNAL_MS = 1000;

async function main(argv: readonly string[]): Promise<number> {
  if (argv[0] === 'backends') {
    return runBackends(argv.slice(1), {
      out: (text) => process.stdout.write(text),
      err: (text) => process.stderr.write(text),
      env: process.env,
    });
  }
  if (argv[0] === 'init') {
    return runInit(argv.slice(1), {
      cwd: process.cwd(),
      out: (text) => process.stdout.write(text),
      err: (text) => process.stderr.write(text),
    });
  }
  let parsed;
  try {
    parsed = parseFlags(argv, process.env);
  } catch (err) {
    process.stderr.write(`error: ${err instanceof Error ? err.message : String(err)}\n`);
    return 2;
  }
  if (parsed.help) {
    process.stdout.write(
      helpText() +
        '\n\nTo start a new model: nereid init <model_name> --backend javascript|python|onnxruntime|llamacpp (nereid init --help)\n' +
        'To install a Python-based backend (pytorch, openvino, fil, tensorflow): nereid backends install <name> (nereid backends --help)\n',
    );
    return 0;
  }
  if (parsed.version) {
    process.stdout.write(`nereid ${packageVersion()}\n`);
    return 0;
  }
  let { options } = parsed;
  if (options.modelRepositories.some(isObjectStoreUrl)) {
    // Only a server with an object-store repository reads (and may be refused by) the cloud settings.
    try {
      options = Object.freeze({ ...options, cloudStorage: cloudStorageFromEnv(process.env) });
    } catch (err) {
      process.stderr.write(`error: ${err instanceof Error ? err.message : String(err)}\n`);
      return 2;
    }
  }
  const sink = options.logFile
    ? (
        (s) => (line: string) =>
          s.write(line + '\n')
      )(createWriteStream(options.logFile, { flags: 'a' }))
    : (line: string) => process.stderr.write(line + '\n');
  const log = new Logger(
    {
      logInfo: options.logInfo,
      logWarning: options.logWarning,
      logError: options.logError,
      logVerbose: options.logVerbose,
      logFormat: options.logFormat,
    },
    sink,
  );
  for (const warning of parsed.warnings) log.warn(warning);

  // SIGHUP never stops the server: from here on it re-reads the TLS certificates (before the server is up,
  // the files were just read, and the poll of the files catches a change).
  let running: Awaited<ReturnType<typeof startNereid>> | undefined;
  process.on('SIGHUP', () => {
    if (running === undefined) {
      log.info('Received SIGHUP while starting: the TLS certificates in use were read at start-up');
      return;
    }
    running.reloadCertificates('SIGHUP').then(
      (results) => {
        if (results.length === 0) log.info('Received SIGHUP: no TLS certificates to reload');
      },
      (err: unknown) => log.error(`SIGHUP: reloading the TLS certificates failed: ${String(err)}`),
    );
  });
  // SIGINT / SIGTERM are handled from before the start, so one that arrives while the models load is not
  // Node's immediate exit: the server stops as soon as it has started. A second SIGINT or SIGTERM ends the
  // process at once with the signal's default action (the impatient Ctrl-C, or an orchestrator that has
  // waited long enough), except within SAME_SIGNAL_MS of the first: one Ctrl-C under `npm start` arrives
  // twice, once to the terminal's process group and once more as npm passes it on to its child (this
  // process), and that is still one request to stop gracefully.
  let stopReason: string | undefined;
  let firstSignalAt = 0;
  let stop: ((why: string) => void) | undefined;
  let stopWatching = (): void => undefined;
  const requestStop = (why: string): void => {
    if (stopReason !== undefined) return;
    stopReason = why;
    stopWatching();
    if (stop) stop(why);
    else log.info(`${why} while starting: the server stops as soon as it has started`);
  };
  const onSignal = (signal: NodeJS.Signals): void => {
    if (firstSignalAt === 0) {
      firstSignalAt = Date.now();
      requestStop(`Received ${signal}`);
      return;
    }
    if (Date.now() - firstSignalAt < SAME_SIGNAL_MS) return;
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    process.kill(process.pid, signal);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  // Under npm (npm start, npx), a SIGTERM sent to npm may stop at the `sh -c` between npm and this process
  // (parent-watch.ts): the parent going away then counts as that signal.
  if (startedByNpm(process.env)) {
    stopWatching = watchParent((pid) =>
      requestStop(`The process that started the server (pid ${pid}) exited`),
    );
  }

  try {
    running = await startNereid(options, log);
  } catch (err) {
    stopWatching();
    log.error(err instanceof NereidError ? err.message : String(err));
    return 1;
  }
  const server = running;

  return new Promise<number>((resolve) => {
    stop = (why: string): void => {
      log.info(`${why}, stopping: waiting for in-flight requests to finish`);
      // The exit timeout counts from the end of the --exit-delay-secs window, when the listeners close.
      const timer = setTimeout(
        () => {
          log.warn(`Exit timeout (${options.exitTimeoutSecs} s) expired with requests still in flight`);
          resolve(0);
        },
        (options.exitDelaySecs + options.exitTimeoutSecs) * 1000,
      );
      timer.unref();
      server.stop().then(
        () => {
          clearTimeout(timer);
          log.info('Server stopped');
          resolve(0);
        },
        (err: unknown) => {
          log.error(`error while stopping: ${String(err)}`);
          resolve(1);
        },
      );
    };
    if (stopReason !== undefined) stop(stopReason);
  });
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`fatal: ${String(err)}\n`);
    process.exit(1);
  },
);
