/**
 * The checks Triton runs on a config before serving it, in Triton's order and wording
 * (ValidateModelConfig, then ValidateInstanceGroup, then ValidateModelIOConfig), for a GPU-less server.
 * A few checks Triton lacks are added where the load would fail later anyway (a version policy that
 * selects no version, an instance count below 1, duplicate tensor names); their messages say so plainly.
 */
import { internal, invalidArg } from '../common/errors.js';
import type {
  DeepReadonly,
  FrozenModelConfig,
  ModelSequenceBatching,
  SequenceControlKind,
} from './model-config.js';
import { ensembleProblem } from './validate-ensemble.js';
import { validateModelIo } from './validate-io.js';
import { checkConfigLimits } from './validate-limits.js';

const ENSEMBLE_PLATFORM = 'ensemble';

// Triton's GetBackendType / GetBackendTypeFromPlatform: which backend a known platform belongs to.
const KNOWN_BACKENDS = new Set(['tensorflow', 'tensorrt', 'onnxruntime', 'pytorch']);
const PLATFORM_BACKEND: Readonly<Record<string, string>> = {
  tensorflow_graphdef: 'tensorflow',
  tensorflow_savedmodel: 'tensorflow',
  tensorrt_plan: 'tensorrt',
  onnxruntime_onnx: 'onnxruntime',
  pytorch_libtorch: 'pytorch',
  libtorch: 'pytorch',
  torch_aoti: 'pytorch',
};

const CORRID_TYPES = new Set(['TYPE_UINT64', 'TYPE_INT64', 'TYPE_UINT32', 'TYPE_INT32', 'TYPE_STRING']);

function fail(message: string): never {
  throw invalidArg(message);
}

function checkIdentity(cfg: FrozenModelConfig): void {
  const name = cfg.name;
  if (!name) fail(`model configuration must specify 'name'`);
  if (!cfg.backend) {
    if (cfg.platform !== ENSEMBLE_PLATFORM) fail(`unexpected platform type '${cfg.platform}' for ${name}`);
  } else if (cfg.platform === ENSEMBLE_PLATFORM) {
    fail(`Ensemble model '${name}' must have platform type '${cfg.platform}' and empty backend type`);
  }
  if (!cfg.platform && !cfg.backend) fail(`must specify 'platform' or 'backend' for '${name}'`);
  if (KNOWN_BACKENDS.has(cfg.backend) && PLATFORM_BACKEND[cfg.platform] !== cfg.backend) {
    fail(`unexpected 'platform' and 'backend' pair, got:${cfg.platform}, ${cfg.backend}`);
  }
  if (cfg.max_batch_size < 0) fail(`'max_batch_size' must be non-negative value for ${name}`);
}

function checkVersionPolicy(cfg: FrozenModelConfig): void {
  const vp = cfg.version_policy as FrozenModelConfig['version_policy'] | undefined;
  const name = cfg.name;
  if (vp?.latest === undefined && vp?.all === undefined && vp?.specific === undefined) {
    fail(`must specify 'version policy' for ${name}`);
  }
  // Nereid additions: Triton accepts these and then fails the load for lack of versions.
  if (vp.latest !== undefined && vp.latest.num_versions < 1) {
    fail(`version policy 'latest' must have 'num_versions' >= 1 for ${name}`);
  }
  if (vp.specific !== undefined) {
    if (vp.specific.versions.length === 0)
      fail(`version policy 'specific' must list at least one version for ${name}`);
    const bad = vp.specific.versions.find((v) => v < 0);
    if (bad !== undefined) fail(`version policy 'specific' lists invalid version ${bad} for ${name}`);
  }
}

function checkDynamicBatching(cfg: FrozenModelConfig): void {
  const db = cfg.dynamic_batching;
  if (db === undefined) return;
  const name = cfg.name;
  for (const size of db.preferred_batch_size) {
    if (size <= 0) fail(`dynamic batching preferred size must be positive for ${name}`);
    if (size > cfg.max_batch_size)
      fail(`dynamic batching preferred size must be <= max batch size for ${name}`);
  }
  const levels = db.priority_levels;
  if (levels !== 0) {
    if (db.default_priority_level === 0 || db.default_priority_level > levels) {
      fail(`default priority level must be in range [1, ${levels}] for ${name}`);
    }
    for (const key of Object.keys(db.priority_queue_policy)) {
      const level = Number(key);
      if (level === 0 || level > levels) {
        fail(`priority queue policy must have priority level in range [1, ${levels}] for ${name}`);
      }
    }
  }
  if (db.preserve_ordering) {
    if (levels > 1) fail(`Only one priority level is allowed when 'preserve_ordering' is true for ${name}`);
    const policies = [db.default_queue_policy, ...Object.values(db.priority_queue_policy)];
    for (const p of policies) {
      if (p !== undefined && p.default_timeout_microseconds !== 0 && p.timeout_action === 'DELAY') {
        fail(
          `Queue policy can not have DELAY as timeout action when 'preserve_ordering' is true for ${name}`,
        );
      }
    }
  }
}

/**
 * Triton's Get{Boolean,Typed}SequenceControlProperties: tensor names are unique, a control kind appears
 * at most once, boolean controls give exactly one of the *_false_true pairs, CORRID gives none.
 */
function checkControl(
  sb: DeepReadonly<ModelSequenceBatching>,
  name: string,
  kind: SequenceControlKind,
  typed: boolean,
): { tensor: string; dataType: string } | undefined {
  const seenTensors = new Set<string>();
  let found: { tensor: string; dataType: string } | undefined;
  for (const ci of sb.control_input) {
    if (!ci.name) fail(`sequence batching control tensor must have a name for ${name}`);
    if (seenTensors.has(ci.name)) {
      fail(
        `sequence batching control tensor '${ci.name}' is specified for multiple control kinds for ${name}`,
      );
    }
    seenTensors.add(ci.name);
    for (const c of ci.control) {
      if (c.kind !== kind) continue;
      if (found !== undefined) fail(`sequence batching specifies multiple ${kind} tensors for ${name}`);
      found = { tensor: ci.name, dataType: c.data_type };
      const lists = [
        ['int32_false_true', c.int32_false_true.length],
        ['fp32_false_true', c.fp32_false_true.length],
        ['bool_false_true', c.bool_false_true.length],
      ] as const;
      const given = lists.filter(([, n]) => n > 0);
      if (typed) {
        if (given.length > 0) {
          fail(
            `sequence batching must not specify either 'int32_false_true', 'fp32_false_true' or 'bool_false_true' for ${kind} for ${name}`,
          );
        }
        continue;
      }
      if (given.length === 0) {
        fail(
          `sequence batching must specify either 'int32_false_true', 'fp32_false_true' or 'bool_false_true' for ${kind} for ${name}`,
        );
      }
      if (given.length > 1) {
        fail(
          `sequence batching specifies more than one from 'int32_false_true', 'fp32_false_true' and 'bool_false_true' for ${kind} for ${name}`,
        );
      }
      const [list, count] = given[0];
      if (count !== 2)
        fail(`sequence batching control '${list}' must have exactly 2 entries for ${kind} for ${name}`);
    }
  }
  return found;
}

function checkSequenceBatching(cfg: FrozenModelConfig): void {
  const sb = cfg.sequence_batching;
  if (sb === undefined) return;
  const name = cfg.name;
  if (cfg.response_cache?.enable === true) {
    fail(
      `Response Cache does not currently support model ${name} with sequence batching scheduler. Please disable the response cache.`,
    );
  }
  checkControl(sb, name, 'CONTROL_SEQUENCE_START', false);
  checkControl(sb, name, 'CONTROL_SEQUENCE_END', false);
  checkControl(sb, name, 'CONTROL_SEQUENCE_READY', false);
  const corrid = checkControl(sb, name, 'CONTROL_SEQUENCE_CORRID', true);
  if (corrid !== undefined && !CORRID_TYPES.has(corrid.dataType)) {
    fail(
      `unexpected data type for control CONTROL_SEQUENCE_CORRID for ${name}. Allowed data types are TYPE_UINT64, TYPE_INT64, TYPE_UINT32, TYPE_INT32 and TYPE_STRING`,
    );
  }
  for (const size of sb.oldest?.preferred_batch_size ?? []) {
    if (size <= 0) fail(`sequence batching preferred batch size must be positive for ${name}`);
    if (size > cfg.max_batch_size)
      fail(`sequence batching preferred batch size must be <= max batch size for ${name}`);
  }
  const util = sb.direct?.minimum_slot_utilization;
  if (util !== undefined && (util < 0 || util > 1 || Number.isNaN(util))) {
    fail(`sequence batching minimum slot utilization must be in range (0.0, 1.0] for ${name}`);
  }
}

function checkMetrics(cfg: FrozenModelConfig): void {
  for (const mc of cfg.model_metrics?.metric_control ?? []) {
    if (mc.metric_identifier === undefined) fail(`metric control must specify 'metric_identifier'`);
    if (!mc.metric_identifier.family) fail(`metric identifier must specify non-empty 'family'`);
    if (mc.histogram_options === undefined) fail(`metric control must specify 'histogram_options'`);
    if (mc.histogram_options.buckets.length === 0) fail(`histogram options must specify non-empty 'buckets'`);
  }
}

/** Triton's ValidateModelConfig. */
function checkModelConfig(cfg: FrozenModelConfig): void {
  checkIdentity(cfg);
  checkVersionPolicy(cfg);
  checkDynamicBatching(cfg);
  checkSequenceBatching(cfg);
  if (cfg.ensemble_scheduling !== undefined) {
    const problem = ensembleProblem(cfg);
    if (problem !== undefined) fail(problem);
  } else if (cfg.platform === ENSEMBLE_PLATFORM) {
    fail(`ensemble scheduling must be set for ensemble ${cfg.name} whose platform is ${ENSEMBLE_PLATFORM}`);
  }
  if (cfg.model_transaction_policy?.decoupled === true && cfg.response_cache?.enable === true) {
    fail(
      `Response Cache does not currently support model ${cfg.name} with 'decoupled' transaction policy. Please disable the response cache.`,
    );
  }
  checkMetrics(cfg);
}

/** Triton's default --min-supported-compute-capability, as its message prints it. */
const MIN_COMPUTE_CAPABILITY = '6.000000';

/** Triton's ValidateInstanceGroup on a server without GPUs. */
function checkInstanceGroups(cfg: FrozenModelConfig): void {
  if (cfg.ensemble_scheduling !== undefined) return;
  const model = cfg.name;
  if (cfg.instance_group.length === 0) fail(`must specify one or more 'instance group's for ${model}`);
  for (const g of cfg.instance_group) {
    const group = `instance group ${g.name} of model ${model}`;
    switch (g.kind) {
      case 'KIND_MODEL':
        if (g.gpus.length > 0) fail(`${group} has kind KIND_MODEL but specifies one or more GPUs`);
        break;
      case 'KIND_GPU':
        // Triton's words on a machine without GPUs (its GPU build, which is what its users run).
        if (g.gpus.length === 0) fail(`${group} has kind KIND_GPU but no GPUs are available`);
        fail(
          `${group} specifies invalid or unsupported gpu id ${g.gpus[0]}. GPUs with at least the minimum ` +
            `required CUDA compute compatibility of ${MIN_COMPUTE_CAPABILITY} are: `,
        );
        break;
      case 'KIND_CPU':
        if (g.gpus.length > 0) fail(`${group} has kind KIND_CPU but specifies one or more GPUs`);
        break;
      default:
        throw internal(`${group} has unexpected kind ${g.kind}`);
    }
    if (cfg.platform !== 'tensorrt_plan' && g.profile.length > 0) {
      // Triton's message lacks the space before "specifies"; this one has it.
      fail(
        `${group} and platform ${cfg.platform} specifies profile field which is only supported for TensorRT models`,
      );
    }
    if (g.count < 1) fail(`${group} must have 'count' >= 1, got ${g.count}`);
  }
}

/**
 * Validates a (normalised) config as Triton does before serving it. Throws NereidError INVALID_ARG with
 * Triton's message (INTERNAL for a KIND_AUTO group, which normalisation should have resolved).
 */
export function validateModelConfig(cfg: FrozenModelConfig): void {
  checkModelConfig(cfg);
  checkInstanceGroups(cfg);
  validateModelIo(cfg);
  checkConfigLimits(cfg);
}
