/**
 * A batch's EXECUTE frame contents: each request as the stub reads it (protocol.ts StubRequest), its
 * input bytes inline in the frame's blob or written into the host->stub /dev/shm file under the batch's
 * pin (released by `unpin` once every request of the batch has ended).
 *
 * One path, synchronous as long as it can be: inputs that all travel inline are described without a
 * promise (the small-request path); the first request with a tensor for /dev/shm waits for its write, and
 * the requests after it go on the same way.
 */
import type { BackendRequest, ParameterValue } from '../../backend-api/backend.js';
import { isServerParameter, type BackendTraceToken } from '../../backend-api/backend.js';
import type { StubRequest, StubTensor } from './protocol.js';
import type { HostToStubArena } from './shm.js';
import { BlobBuilder, describeInline, describeTensors, type TensorSink } from './tensors.js';

/** A batch ready to send: its requests on the wire, their inline bytes, and its hold on /dev/shm. */
export interface StubBatchInput {
  readonly wire: StubRequest[];
  readonly blob: BlobBuilder;
  readonly unpin: () => void;
}

export interface BatchInputOptions {
  /** The host->stub file (undefined: every tensor inline). */
  readonly arena: HostToStubArena | undefined;
  readonly threshold: number;
  /** Nothing in the host->stub file is read any more: the batch may start it afresh (arena.reset()). */
  readonly reset: boolean;
  /** A new request number (BatchLedger.takeRid). */
  readonly rid: () => number;
}

/** The batch's EXECUTE contents; rejects (its pin released) when an input cannot be written. */
export function batchInput(
  live: readonly BackendRequest[],
  o: BatchInputOptions,
): StubBatchInput | Promise<StubBatchInput> {
  const arena = o.arena;
  if (o.reset) arena?.reset();
  const pin = arena?.pin();
  const unpin = (): void => {
    if (pin !== undefined) arena?.unpin(pin);
  };
  const input: StubBatchInput = { wire: [], blob: new BlobBuilder(), unpin };
  const sink: TensorSink = { arena, threshold: o.threshold, pin };
  try {
    const described = describeFrom(live, 0, sink, input, o.rid);
    if (!(described instanceof Promise)) return described;
    return described.catch((err: unknown) => {
      unpin();
      throw err;
    });
  } catch (err) {
    unpin();
    throw err;
  }
}

/** Describes requests from `from` on: in this turn while inputs go inline, after a /dev/shm write if not. */
function describeFrom(
  live: readonly BackendRequest[],
  from: number,
  sink: TensorSink,
  input: StubBatchInput,
  rid: () => number,
): StubBatchInput | Promise<StubBatchInput> {
  for (let i = from; i < live.length; i++) {
    const r = live[i];
    const inputs = describeInline(r.inputs.values(), sink, input.blob);
    if (inputs === undefined) {
      return describeTensors(r.inputs.values(), sink, input.blob).then((written) => {
        input.wire.push(stubRequest(r, written, rid()));
        return describeFrom(live, i + 1, sink, input, rid);
      });
    }
    input.wire.push(stubRequest(r, inputs, rid()));
  }
  return input;
}

function stubRequest(r: BackendRequest, inputs: StubTensor[], rid: number): StubRequest {
  const corr = r.correlationId;
  return {
    rid,
    request_id: r.id,
    correlation_id: String(corr),
    correlation_is_string: typeof corr === 'string',
    flags: r.flags,
    parameters: parametersJson(r.parameters),
    requested_outputs: [...r.requestedOutputs],
    inputs,
    ...(r.signal.aborted ? { cancelled: true } : {}),
    ...(r.trace ? traceWire(r.trace) : {}),
  };
}

/** A parameter value as JSON text (bigints exactly, as JSON numbers). */
function parameterJson(v: ParameterValue): string {
  if (typeof v === 'bigint') return v.toString();
  if (typeof v === 'number' && !Number.isFinite(v)) return 'null';
  return JSON.stringify(v);
}

function parametersJson(params: Readonly<Record<string, ParameterValue>>): string {
  const parts: string[] = [];
  for (const [k, v] of Object.entries(params)) {
    if (isServerParameter(k)) continue;
    parts.push(`${JSON.stringify(k)}:${parameterJson(v)}`);
  }
  return `{${parts.join(',')}}`;
}

/** A traced request's marker and context on the wire to the stub. */
function traceWire(trace: BackendTraceToken): { traced: true; trace_context?: string } {
  const context = trace.context();
  return context === undefined ? { traced: true } : { traced: true, trace_context: context };
}
