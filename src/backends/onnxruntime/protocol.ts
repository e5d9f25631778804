/**
 * The messages between an instance (main thread) and its ONNX Runtime worker thread. Everything here is
 * structured-cloneable; tensor bytes travel as whole ArrayBuffers in the transfer list, never cloned.
 */
import type { DataType } from '../../common/datatype.js';
import type { ErrorCode } from '../../common/errors.js';

/** A tensor on the wire: `data` holds exactly the tensor's bytes (offset 0, full length). */
export interface OrtWireTensor {
  name: string;
  datatype: DataType;
  shape: number[];
  data: ArrayBuffer;
}

/** One model input or output as the session reports it. */
export interface IoMeta {
  name: string;
  /** false for sequences and maps, which Triton cannot describe. */
  isTensor: boolean;
  /** onnxruntime type name ('float32', 'string', ...); '' for non-tensors. */
  ortType: string;
  /** Dims with -1 for every symbolic or unknown dimension. */
  shape: number[];
}

/** What a session says about its model. */
export interface ModelIo {
  readonly inputs: readonly IoMeta[];
  readonly outputs: readonly IoMeta[];
}

/** The subset of onnxruntime-node's SessionOptions Nereid sets (plain data, cloneable). */
export interface OrtSessionSettings {
  intraOpNumThreads: number;
  interOpNumThreads?: number;
  executionMode: 'sequential' | 'parallel';
  graphOptimizationLevel: 'disabled' | 'basic' | 'extended' | 'all';
  enableCpuMemArena?: boolean;
  enableMemPattern?: boolean;
  logSeverityLevel: 0 | 1 | 2 | 3 | 4;
  /** Session config entries (e.g. 'session.use_device_allocator_for_initializers'). */
  configEntries: Record<string, string>;
}

/** workerData of a worker: it creates its session from this at start-up. */
export interface OrtWorkerInit {
  /** The .onnx file itself (a model folder already resolved to `<folder>/model.onnx`). */
  modelPath: string;
  settings: OrtSessionSettings;
}

export interface RunMessage {
  kind: 'run';
  id: number;
  feeds: OrtWireTensor[];
  /** Output names to compute; ORT skips the rest of the graph where it can. */
  fetches: string[];
}

/** Test hook: the worker dies (uncaught exception) after its next run, before answering it. */
export interface CrashNextRunMessage {
  kind: 'crash-next-run';
}

export type OrtToWorker = PackedRun | CrashNextRunMessage;

/**
 * One run's outputs and when onnxruntime itself ran: process.hrtime.bigint() just before session.run()
 * (the feeds are ORT tensors by then) and just after it. The clock is the process's, the same on every
 * thread, so the instance can split the whole execution into Triton's compute_input / compute_infer /
 * compute_output phases.
 */
export interface RunResult {
  outputs: OrtWireTensor[];
  runStart: bigint;
  runEnd: bigint;
}

export type OrtFromWorker =
  | { kind: 'ready'; inputs: IoMeta[]; outputs: IoMeta[] }
  | { kind: 'load-error'; code: ErrorCode; message: string }
  | PackedResult
  | { kind: 'run-error'; id: number; code: ErrorCode; message: string };

/**
 * Runs and their results, the messages of every request, travel as flat arrays rather than objects: the
 * structured clone of an object writes and re-reads (and interns) every property name, which on a tiny
 * model is a measurable share of the hop. Each tensor is four slots: name, datatype, shape, data.
 */
type PackedTensors = (string | number[] | ArrayBuffer)[];
/** [id, fetches, ...tensors]: a RunMessage. */
export type PackedRun = [number, string[], ...PackedTensors];
/** [id, runStart, runEnd, ...tensors]: a run's RunResult. */
export type PackedResult = [number, bigint, bigint, ...PackedTensors];

function packTensors(out: unknown[], tensors: readonly OrtWireTensor[]): void {
  for (const t of tensors) out.push(t.name, t.datatype, t.shape, t.data);
}

function unpackTensors(packed: readonly unknown[], from: number): OrtWireTensor[] {
  const tensors: OrtWireTensor[] = [];
  for (let i = from; i + 3 < packed.length; i += 4) {
    tensors.push({
      name: packed[i] as string,
      datatype: packed[i + 1] as DataType,
      shape: packed[i + 2] as number[],
      data: packed[i + 3] as ArrayBuffer,
    });
  }
  return tensors;
}

export function packRun(msg: Omit<RunMessage, 'kind'>): PackedRun {
  const out: unknown[] = [msg.id, msg.fetches];
  packTensors(out, msg.feeds);
  return out as PackedRun;
}

export function unpackRun(packed: PackedRun): RunMessage {
  return { kind: 'run', id: packed[0], fetches: packed[1], feeds: unpackTensors(packed, 2) };
}

export function packResult(id: number, result: RunResult): PackedResult {
  const out: unknown[] = [id, result.runStart, result.runEnd];
  packTensors(out, result.outputs);
  return out as PackedResult;
}

export function unpackResult(packed: PackedResult): { id: number; result: RunResult } {
  return {
    id: packed[0],
    result: { runStart: packed[1], runEnd: packed[2], outputs: unpackTensors(packed, 3) },
  };
}
