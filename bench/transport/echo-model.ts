/**
 * The one model both bare echo servers pretend to serve: an FP32 identity with the same name, shapes and
 * batching as examples/model_repository/identity_fp32, so perf_analyzer sees the same metadata and config
 * from an echo server as from Nereid and sends the same requests. Also the few counters the echo servers
 * keep so that perf_analyzer's server-side statistics block has numbers in it.
 */

export const ECHO_MODEL = 'identity_fp32';
export const MAX_BATCH_SIZE = 8;

/** `GET /v2/models/<m>` (HTTP) and ModelMetadataResponse (gRPC, shapes as numbers). */
export function modelMetadata(name: string): {
  name: string;
  versions: string[];
  platform: string;
  inputs: { name: string; datatype: string; shape: number[] }[];
  outputs: { name: string; datatype: string; shape: number[] }[];
} {
  return {
    name,
    versions: ['1'],
    platform: 'onnxruntime_onnx',
    inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [-1, -1] }],
    outputs: [{ name: 'OUTPUT0', datatype: 'FP32', shape: [-1, -1] }],
  };
}

/** `GET /v2/models/<m>/config` (HTTP) and ModelConfig (gRPC): the fields perf_analyzer reads. */
export function modelConfig(name: string): Record<string, unknown> {
  return {
    name,
    platform: 'onnxruntime_onnx',
    backend: 'onnxruntime',
    version_policy: { latest: { num_versions: 1 } },
    max_batch_size: MAX_BATCH_SIZE,
    input: [{ name: 'INPUT0', data_type: 'TYPE_FP32', dims: [-1] }],
    output: [{ name: 'OUTPUT0', data_type: 'TYPE_FP32', dims: [-1] }],
    instance_group: [{ name, kind: 'KIND_CPU', count: 1 }],
  };
}

/** The output a tensor named `input` is echoed to: INPUT0 -> OUTPUT0, anything else keeps its name. */
export function outputName(input: string): string {
  return input.startsWith('INPUT') ? 'OUTPUT' + input.slice('INPUT'.length) : input;
}

/** Requests, inferences (batch-expanded) and their summed wall time, for the statistics endpoints. */
export class EchoCounters {
  requests = 0;
  inferences = 0;
  ns = 0n;
  lastMs = 0;

  record(batch: number, startNs: bigint): void {
    this.requests++;
    this.inferences += batch;
    this.ns += process.hrtime.bigint() - startNs;
    this.lastMs = Date.now();
  }

  /** One model_stats entry as Triton's statistics extension writes it (HTTP JSON numbers). */
  modelStats(name: string): Record<string, unknown> {
    const ns = Number(this.ns);
    const duration = { count: this.requests, ns };
    // perf_analyzer insists that every compute phase counts the same executions
    const none = { count: this.requests, ns: 0 };
    const zero = { count: 0, ns: 0 };
    return {
      name,
      version: '1',
      last_inference: this.lastMs,
      inference_count: this.inferences,
      execution_count: this.requests,
      inference_stats: {
        success: duration,
        fail: zero,
        queue: none,
        compute_input: none,
        compute_infer: duration,
        compute_output: none,
        cache_hit: zero,
        cache_miss: zero,
      },
      batch_stats: [],
    };
  }
}

/** Port 0 unless `--port N` is given; prints the bound port for run.sh to read. */
export function portArgument(argv: readonly string[]): number {
  const i = argv.indexOf('--port');
  if (i < 0) return 0;
  const port = Number(argv[i + 1]);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`bad --port ${argv[i + 1]}`);
  return port;
}
