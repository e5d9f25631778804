/**
 * Opening and running one onnxruntime session on whichever thread calls it: the worker thread of an
 * instance (worker.ts), or the event loop itself for a model configured with `execution_thread:
 * "event_loop"` (instance.ts). Both see the same options, errors and wire tensors.
 */
import { InferenceSession, type Tensor as OrtTensor } from 'onnxruntime-node';
import { NereidError } from '../../common/errors.js';
import { fromOrtTensor, toOrtTensor } from './codec.js';
import type { IoMeta, RunResult, OrtWireTensor, OrtWorkerInit } from './protocol.js';

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function toSessionOptions(init: OrtWorkerInit): InferenceSession.SessionOptions {
  const s = init.settings;
  const options: InferenceSession.SessionOptions = {
    executionProviders: ['cpu'],
    intraOpNumThreads: s.intraOpNumThreads,
    executionMode: s.executionMode,
    graphOptimizationLevel: s.graphOptimizationLevel,
    logSeverityLevel: s.logSeverityLevel,
    extra: s.configEntries,
  };
  if (s.interOpNumThreads !== undefined) options.interOpNumThreads = s.interOpNumThreads;
  if (s.enableCpuMemArena !== undefined) options.enableCpuMemArena = s.enableCpuMemArena;
  if (s.enableMemPattern !== undefined) options.enableMemPattern = s.enableMemPattern;
  return options;
}

/** onnxruntime's words when a Cast node's string-to-number parse threw (std::stoi, stoll, stof, ...). */
const STRING_PARSE_FAILURE = /running Cast node\b.*Status Message: sto(?:i|l|ll|ul|ull|f|d|ld)\b/s;

/** Creates the session, turning onnxruntime's load failures into Triton-style errors. */
export async function openSession(init: OrtWorkerInit): Promise<InferenceSession> {
  try {
    return await InferenceSession.create(init.modelPath, toSessionOptions(init));
  } catch (err) {
    const text = messageOf(err);
    // onnxruntime-node 1.30 maps ONNX element type 16 (bfloat16) to nothing and refuses the session.
    if (/Unsupported data type: 16\b/.test(text)) {
      throw new NereidError(
        'UNSUPPORTED',
        `onnxruntime-node does not support BF16 (bfloat16) model inputs or outputs: ${init.modelPath}`,
      );
    }
    throw new NereidError('INTERNAL', `onnx runtime error: ${text}`);
  }
}

function describe(meta: readonly InferenceSession.ValueMetadata[]): IoMeta[] {
  return meta.map((m) =>
    m.isTensor
      ? {
          name: m.name,
          isTensor: true,
          ortType: m.type,
          // Symbolic dims arrive as their names ('' when anonymous); Triton spells every one of them -1.
          shape: m.shape.map((d) => (typeof d === 'number' ? d : -1)),
        }
      : { name: m.name, isTensor: false, ortType: '', shape: [] },
  );
}

/** The model's inputs and outputs as the session reports them. */
export function sessionIo(session: InferenceSession): { inputs: IoMeta[]; outputs: IoMeta[] } {
  return { inputs: describe(session.inputMetadata), outputs: describe(session.outputMetadata) };
}

/**
 * One run: wire tensors in, the fetched outputs out (each in an ArrayBuffer of its own), with the moments
 * onnxruntime's own run started and ended (RunResult).
 */
export async function runSession(
  session: InferenceSession,
  feeds: readonly OrtWireTensor[],
  fetches: readonly string[],
): Promise<RunResult> {
  const ortFeeds: Record<string, OrtTensor> = {};
  for (const f of feeds) ortFeeds[f.name] = toOrtTensor(f);
  let result: InferenceSession.ReturnType;
  // session.run() defers its synchronous work to setImmediate: the run starts here as far as the
  // statistics go, the wait for the next turn of this thread's loop included.
  const runStart = process.hrtime.bigint();
  try {
    result = await session.run(ortFeeds, [...fetches]);
  } catch (err) {
    const text = messageOf(err);
    // A Cast node from strings whose C++ number parse threw (std::stoll and friends, on '' or 'abc'): the
    // client sent a string that is not a number, as simple_string's inputs must be. Its mistake: 400, not
    // Triton's INTERNAL (issue 33; a documented difference, docs/security.md).
    if (STRING_PARSE_FAILURE.test(text)) {
      throw new NereidError(
        'INVALID_ARG',
        `onnx runtime error: an input string is not a number the model can convert (${text})`,
      );
    }
    // Triton reports ORT failures as INTERNAL "onnx runtime error <code>: <message>".
    throw new NereidError('INTERNAL', `onnx runtime error: ${text}`);
  }
  const runEnd = process.hrtime.bigint();
  const outputs = fetches.map((name) => {
    const value = result[name];
    if (value === undefined)
      throw new NereidError('INTERNAL', `onnx runtime did not produce output '${name}'`);
    return fromOrtTensor(name, value);
  });
  return { outputs, runStart, runEnd };
}
