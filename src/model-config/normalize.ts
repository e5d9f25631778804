/**
 * Fills in the defaults Triton's core adds before serving a config, in Triton's order: the backend
 * fields its server-side autofill derives (AutoCompleteBackendFields), then NormalizeModelConfig
 * (version policy, preferred batch sizes, sequence idle time, pinned-memory flags), then
 * NormalizeInstanceGroup (default group, names, kind, count). Nereid has no GPUs, so KIND_AUTO resolves
 * to KIND_CPU as in Triton, and KIND_GPU groups are moved to the CPU and reported (Triton would refuse
 * the model; `gpuGroups: 'keep'` leaves them for validate() to refuse as Triton does).
 * Pure: returns a new config and leaves the argument untouched.
 */
import { invalidArg } from '../common/errors.js';
import type {
  InstanceGroupKind,
  ModelConfig,
  ModelInstanceGroup,
  ModelQueuePolicy,
  ModelOptimizationPolicy,
} from './model-config.js';
import { messageDescriptor } from './schema.js';
import { newMessage } from './values.js';

/** Triton's default `max_sequence_idle_microseconds` (core constants.h). */
export const SEQUENCE_IDLE_DEFAULT_MICROSECONDS = 1_000_000;

/**
 * The policy a dynamic batcher uses when `default_queue_policy` is absent: every field at its proto3
 * default. Triton does not write it into the config (GET /config omits it), so neither does normalize().
 */
export const DEFAULT_QUEUE_POLICY: Readonly<ModelQueuePolicy> = Object.freeze({
  timeout_action: 'REJECT',
  default_timeout_microseconds: 0,
  allow_timeout_override: false,
  max_queue_size: 0,
});

export const ENSEMBLE_PLATFORM = 'ensemble';

/** A backend's preferred instance group (TRITONBACKEND_BackendAttributeAddPreferredInstanceGroup). */
export interface PreferredInstanceGroup {
  readonly kind: InstanceGroupKind;
  /** 0 = let Triton's default count apply. */
  readonly count: number;
  readonly gpus?: readonly number[];
}

export interface NormalizeOptions {
  /** The backend the loader resolved for this model; fills an empty `backend` (never for ensembles). */
  readonly backend?: string;
  /** Fills an empty `platform`, e.g. 'onnxruntime_onnx' (never for ensembles). */
  readonly defaultPlatform?: string;
  /** Fills an empty `default_model_filename` when Triton's own rules give none. */
  readonly defaultModelFilename?: string;
  /** The model's directory name; fills an empty `name`. */
  readonly modelName?: string;
  /** File names in the model's first version folder, used to guess the backend as Triton's autofill does. */
  readonly versionFiles?: readonly string[];
  /** Number of GPUs; Nereid serves on CPU only. */
  readonly gpuCount?: 0;
  readonly preferredInstanceGroups?: readonly PreferredInstanceGroup[];
  /**
   * KIND_GPU groups on this server without GPUs: 'cpu' (the default) runs them on the CPU — kind KIND_CPU,
   * `gpus` cleared — and names them to onGpuGroupsMoved; 'keep' leaves them as they are, for validate() to
   * refuse with Triton's message (`--strict-gpu-kind`).
   */
  readonly gpuGroups?: 'cpu' | 'keep';
  /** Receives the names of the KIND_GPU groups moved to the CPU (once per config, when there are any). */
  readonly onGpuGroupsMoved?: (groups: readonly string[]) => void;
}

interface BackendRule {
  readonly backend: string;
  readonly platform?: string;
  readonly file: string;
}

// Triton's known model files, in the order its autofill probes them (core model_config_utils.cc).
const FILE_RULES: readonly BackendRule[] = [
  { backend: 'tensorflow', platform: 'tensorflow_savedmodel', file: 'model.savedmodel' },
  { backend: 'tensorflow', platform: 'tensorflow_graphdef', file: 'model.graphdef' },
  { backend: 'tensorrt', platform: 'tensorrt_plan', file: 'model.plan' },
  { backend: 'onnxruntime', platform: 'onnxruntime_onnx', file: 'model.onnx' },
  { backend: 'openvino', file: 'model.xml' },
  { backend: 'pytorch', platform: 'pytorch_libtorch', file: 'model.pt' },
  { backend: 'pytorch', platform: 'torch_aoti', file: 'model.pt2' },
  { backend: 'python', file: 'model.py' },
];

const PLATFORM_BACKEND: Readonly<Record<string, string>> = {
  tensorflow_savedmodel: 'tensorflow',
  tensorflow_graphdef: 'tensorflow',
  tensorrt_plan: 'tensorrt',
  onnxruntime_onnx: 'onnxruntime',
  pytorch_libtorch: 'pytorch',
  libtorch: 'pytorch',
  torch_aoti: 'pytorch',
};

/** The platform and file a known backend implies when the config leaves them empty. */
function completeKnownBackend(cfg: ModelConfig): void {
  const rules = FILE_RULES.filter((r) => r.backend === cfg.backend);
  if (rules.length === 0) return;
  if (cfg.backend === 'tensorflow') {
    const byFile = rules.find((r) => r.file === cfg.default_model_filename);
    if (!cfg.platform && byFile?.platform !== undefined) cfg.platform = byFile.platform;
    const byPlatform = rules.find((r) => r.platform === cfg.platform);
    if (!cfg.default_model_filename && byPlatform) cfg.default_model_filename = byPlatform.file;
    return;
  }
  if (cfg.backend === 'pytorch') {
    if (!cfg.platform) {
      cfg.platform = 'pytorch_libtorch';
      if (!cfg.default_model_filename) cfg.default_model_filename = 'model.pt';
    } else if (cfg.platform === 'torch_aoti' && !cfg.default_model_filename) {
      cfg.default_model_filename = 'model.pt2';
    }
    return;
  }
  const rule = rules[0];
  if (!cfg.platform && rule.platform !== undefined) cfg.platform = rule.platform;
  if (!cfg.default_model_filename) cfg.default_model_filename = rule.file;
}

/** Triton's server-side autofill of name/backend/platform/default_model_filename, minus file probing. */
function fillBackendFields(cfg: ModelConfig, opts: NormalizeOptions): void {
  if (!cfg.name && opts.modelName) cfg.name = opts.modelName;
  if (cfg.platform === ENSEMBLE_PLATFORM) return;
  if (!cfg.backend && opts.backend) cfg.backend = opts.backend;
  if (!cfg.backend) {
    const byPlatform = PLATFORM_BACKEND[cfg.platform];
    const byFile = FILE_RULES.find((r) => r.file === cfg.default_model_filename);
    const probe =
      !cfg.platform && !cfg.default_model_filename
        ? FILE_RULES.find((r) => opts.versionFiles?.includes(r.file))
        : undefined;
    const found = byPlatform ?? byFile?.backend ?? probe?.backend;
    if (found !== undefined) {
      cfg.backend = found;
      if (!cfg.platform && probe?.platform !== undefined && found === probe.backend)
        cfg.platform = probe.platform;
    }
  }
  completeKnownBackend(cfg);
  if (!cfg.backend && !cfg.platform && !cfg.default_model_filename) {
    // Triton's rule for custom backends: a model named `<anything>.<backend>` uses that backend.
    const dot = cfg.name.indexOf('.');
    if (dot < 0) {
      throw invalidArg(
        `Invalid model name: Could not determine backend for model '${cfg.name}' with no backend in model configuration. Expected model name of the form 'model.<backend_name>'.`,
      );
    }
    cfg.backend = cfg.name.slice(dot + 1);
    cfg.default_model_filename = `model.${cfg.backend}`;
  }
  if (!cfg.platform && opts.defaultPlatform) cfg.platform = opts.defaultPlatform;
  if (!cfg.default_model_filename && opts.defaultModelFilename)
    cfg.default_model_filename = opts.defaultModelFilename;
}

function hasVersionChoice(cfg: ModelConfig): boolean {
  const vp = cfg.version_policy as ModelConfig['version_policy'] | undefined;
  return vp?.latest !== undefined || vp?.all !== undefined || vp?.specific !== undefined;
}

/** Triton's NormalizeModelConfig. */
function normalizeScheduling(cfg: ModelConfig): void {
  if (!hasVersionChoice(cfg)) cfg.version_policy = { latest: { num_versions: 1 } };
  const db = cfg.dynamic_batching;
  if (db && db.preferred_batch_size.length === 0 && cfg.max_batch_size > 0) {
    db.preferred_batch_size.push(cfg.max_batch_size);
  }
  const sb = cfg.sequence_batching;
  if (sb) {
    if (sb.max_sequence_idle_microseconds === 0)
      sb.max_sequence_idle_microseconds = SEQUENCE_IDLE_DEFAULT_MICROSECONDS;
    if (sb.oldest && sb.oldest.preferred_batch_size.length === 0 && cfg.max_batch_size > 0) {
      sb.oldest.preferred_batch_size.push(cfg.max_batch_size);
    }
  }
  if (!cfg.ensemble_scheduling) {
    cfg.optimization ??= newMessage(
      messageDescriptor('ModelOptimizationPolicy'),
    ) as unknown as ModelOptimizationPolicy;
    cfg.optimization.input_pinned_memory ??= { enable: true };
    cfg.optimization.output_pinned_memory ??= { enable: true };
  }
}

/** Triton's SetDefaultInstanceCount: CPU groups of onnxruntime/tensorflow models get 2, others 1. */
function defaultInstanceCount(kind: InstanceGroupKind, backend: string): number {
  return kind === 'KIND_CPU' && (backend === 'onnxruntime' || backend === 'tensorflow') ? 2 : 1;
}

function newInstanceGroup(): ModelInstanceGroup {
  return newMessage(messageDescriptor('ModelInstanceGroup')) as unknown as ModelInstanceGroup;
}

/** Triton's NormalizeInstanceGroup with an empty set of supported GPUs. */
function normalizeInstanceGroups(cfg: ModelConfig, opts: NormalizeOptions): void {
  if (cfg.ensemble_scheduling) return;
  const preferred = opts.preferredInstanceGroups ?? [];
  if (cfg.instance_group.length === 0) {
    const group = newInstanceGroup();
    group.name = cfg.name;
    for (const pg of preferred) {
      if (pg.kind === 'KIND_GPU') continue; // no GPU available
      if (pg.kind === 'KIND_AUTO') group.gpus.push(...(pg.gpus ?? []));
      group.kind = pg.kind;
      group.count = pg.count;
      break;
    }
    cfg.instance_group.push(group);
  }
  const moved: string[] = [];
  cfg.instance_group.forEach((group, index) => {
    if (!group.name) group.name = `${cfg.name}_${index}`;
    group.gpus ??= [];
    if (group.kind === 'KIND_AUTO') group.kind = 'KIND_CPU';
    if (group.kind === 'KIND_GPU' && opts.gpuGroups !== 'keep') {
      moved.push(group.name);
      group.kind = 'KIND_CPU';
      group.gpus = [];
    }
    for (const pg of preferred) {
      if (pg.kind === group.kind && group.count < 1 && pg.count > 0) group.count = pg.count;
    }
    if (group.count < 1) group.count = defaultInstanceCount(group.kind, cfg.backend);
  });
  if (moved.length > 0) opts.onGpuGroupsMoved?.(moved);
}

/** Returns a copy of `input` with Triton's defaults filled in (see the module comment for the stages). */
export function normalizeModelConfig(input: ModelConfig, opts: NormalizeOptions = {}): ModelConfig {
  const cfg = structuredClone(input);
  fillBackendFields(cfg, opts);
  normalizeScheduling(cfg);
  normalizeInstanceGroups(cfg, opts);
  return cfg;
}
