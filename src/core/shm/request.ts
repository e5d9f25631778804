/**
 * Shared memory around one inference request: before the model sees it, every input that names a region
 * is read into a Buffer (then validated like any other input); after it, every output the client asked
 * to receive in a region is written there and returned with `sharedMemory` set and no data. The request
 * holds its regions from the first lookup until release(), so an unregister meanwhile waits for it.
 */
import { byteSizeOf } from '../../common/datatype.js';
import { NereidError, invalidArg, unsupported } from '../../common/errors.js';
import { ResponseStream } from '../response-stream.js';
import type { InferenceRequest, InferenceResponse, InferInput, OutputTensor } from '../types.js';
import { shown } from './key.js';
import { CLIENT_SHM_DISABLED, type ShmSlice, type SystemSharedMemoryManager } from './manager.js';
import { MAX_SINGLE_TRANSFER } from './region.js';

const EMPTY = Buffer.alloc(0);

export interface ShmRequest {
  /** The request with every shared-memory input replaced by its bytes. */
  readonly request: InferenceRequest;
  /** Writes the response's shared-memory outputs into their regions; returns the response to send. */
  writeOutputs(response: InferenceResponse): Promise<InferenceResponse>;
  /** Lets go of the regions; call exactly once, when the request is over (success or not). */
  release(): void;
}

export function usesSharedMemory(request: InferenceRequest): boolean {
  return (
    request.inputs.some((i) => i.sharedMemory !== undefined) ||
    (request.outputs?.some((o) => o.sharedMemory !== undefined) ?? false)
  );
}

/**
 * The byte size a fixed-size input must have, from its own shape; undefined for BYTES or a shape the core
 * will refuse anyway (it then reads nothing and lets validation report the shape).
 */
function expectedSize(input: InferInput): number | undefined {
  const element = byteSizeOf(input.datatype);
  if (element === 0) return undefined;
  let n = element;
  for (const d of input.shape) {
    if (!Number.isSafeInteger(d) || d < 0) return undefined;
    n *= d;
    if (!Number.isSafeInteger(n)) return undefined;
  }
  return n;
}

async function readInput(input: InferInput, slice: ShmSlice, model: string): Promise<InferInput> {
  if (input.data.length > 0) {
    throw invalidArg(`input '${shown(input.name)}' sets both data and 'shared_memory_region'`);
  }
  const expected = expectedSize(input);
  let data: Buffer = EMPTY;
  if (expected !== undefined && slice.byteSize !== expected) {
    // Triton's validation text; checked before reading so a wrong size costs no allocation.
    throw invalidArg(
      `input byte size mismatch for input '${shown(input.name)}' for model '${shown(model)}'. ` +
        `Expected ${expected}, got ${slice.byteSize}`,
    );
  }
  if (expected !== undefined || input.datatype === 'BYTES') {
    if (slice.byteSize > MAX_SINGLE_TRANSFER) {
      throw invalidArg(
        `input '${shown(input.name)}': ${slice.byteSize} bytes in shared memory exceeds the limit of ` +
          `${MAX_SINGLE_TRANSFER} bytes per tensor`,
      );
    }
    data = await slice.region.read(slice.offset, slice.byteSize);
  }
  const { sharedMemory: _ref, ...rest } = input;
  return { ...rest, data };
}

/**
 * Resolves the request's shared-memory references. Throws (holding nothing) when client shared memory is
 * disabled, a region is unknown or a slice is out of bounds; reads every input region.
 */
export async function prepareShmRequest(
  manager: SystemSharedMemoryManager,
  request: InferenceRequest,
): Promise<ShmRequest> {
  if (!manager.allowed) throw unsupported(CLIENT_SHM_DISABLED);
  const held: ShmSlice[] = [];
  let released = false;
  const release = (): void => {
    if (released) return;
    released = true;
    for (const s of held) manager.release(s);
  };

  try {
    const inputSlices = new Map<number, ShmSlice>();
    request.inputs.forEach((input, index) => {
      const ref = input.sharedMemory;
      if (ref === undefined) return;
      const slice = manager.acquire(ref.region, ref.offset, ref.byteSize);
      held.push(slice);
      inputSlices.set(index, slice);
    });
    const targets = new Map<string, ShmSlice>();
    for (const output of request.outputs ?? []) {
      const ref = output.sharedMemory;
      if (ref === undefined) continue;
      if (output.parameters?.classification !== undefined) {
        throw invalidArg("Output can't set both 'shared_memory_region' and 'classification'");
      }
      const slice = manager.acquire(ref.region, ref.offset, ref.byteSize);
      held.push(slice);
      targets.set(output.name, slice);
    }

    const inputs = await Promise.all(
      request.inputs.map(async (input, index) => {
        const slice = inputSlices.get(index);
        return slice === undefined ? input : await readInput(input, slice, request.modelName);
      }),
    );
    const outputs = request.outputs?.map((o) => {
      if (o.sharedMemory === undefined) return o;
      const { sharedMemory: _ref, ...rest } = o;
      return rest;
    });

    return {
      request: { ...request, inputs, ...(outputs !== undefined && { outputs }) },
      writeOutputs: (response) => writeOutputs(targets, response),
      release,
    };
  } catch (err) {
    release();
    throw err;
  }
}

async function writeOutputs(
  targets: ReadonlyMap<string, ShmSlice>,
  response: InferenceResponse,
): Promise<InferenceResponse> {
  if (targets.size === 0) return response;
  // Check every size before writing anything, so a failed response leaves no partial results behind.
  for (const t of response.outputs) {
    const slice = targets.get(t.name);
    if (slice !== undefined && t.data.length > slice.byteSize) {
      throw invalidArg(
        `shared memory size specified with the request for output '${shown(t.name)}' (${slice.byteSize} bytes) ` +
          `should be at least ${t.data.length} bytes to hold the results`,
      );
    }
  }
  const outputs = await Promise.all(
    response.outputs.map(async (t): Promise<OutputTensor> => {
      const slice = targets.get(t.name);
      if (slice === undefined) return t;
      await slice.region.write(slice.offset, t.data);
      return {
        name: t.name,
        datatype: t.datatype,
        shape: t.shape,
        data: EMPTY,
        sharedMemory: { region: slice.region.name, offset: slice.offset, byteSize: t.data.length },
      };
    }),
  );
  return { ...response, outputs };
}

/**
 * Runs a request that uses shared memory: resolves it, runs it with `run`, writes every response's
 * shared-memory outputs, and releases the regions when the model's stream ends. The work is pushed, not
 * pulled, so a consumer that stops iterating (a cancelled stream) cannot keep regions held forever.
 */
export function inferWithSharedMemory(
  manager: SystemSharedMemoryManager,
  request: InferenceRequest,
  run: (request: InferenceRequest) => AsyncIterable<InferenceResponse>,
  /** Called once run() has returned (the request was accepted or refused), or reading inputs failed. */
  started?: () => void,
): AsyncIterable<InferenceResponse> {
  const out = new ResponseStream<InferenceResponse>();
  void (async () => {
    let shm: ShmRequest | undefined;
    try {
      let responses: AsyncIterable<InferenceResponse>;
      try {
        shm = await prepareShmRequest(manager, request);
        responses = run(shm.request);
      } finally {
        started?.();
      }
      for await (const response of responses) {
        out.push(await shm.writeOutputs(response), response.final);
      }
      out.close();
    } catch (err) {
      out.fail(NereidError.from(err));
    } finally {
      shm?.release();
    }
  })();
  return out;
}
