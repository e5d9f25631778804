/**
 * Loading an ensemble version: plan the step graph, check it against the completed configs of the member
 * versions the repository has already loaded (it loads members first), decide whether the ensemble is
 * decoupled in effect, and build the EnsembleVersion. Called by the model loader for `platform: "ensemble"`.
 */
import { NereidError, invalidArg } from '../../common/errors.js';
import { ENSEMBLE_PLATFORM, freezeModelConfig } from '../../model-config/index.js';
import type { Logger } from '../../common/logger.js';
import type { FrozenModelConfig } from '../../model-config/model-config.js';
import type { ResponseCache } from '../cache/index.js';
import type { StatsRegistry } from '../stats/registry.js';
import { EnsembleVersion } from './ensemble-version.js';
import { checkMembers } from './members.js';
import { describeStep, planEnsemble } from './plan.js';
import type { VersionLookup } from '../model/servable.js';

export function isEnsembleConfig(config: { readonly platform: string }): boolean {
  return config.platform === ENSEMBLE_PLATFORM;
}

export interface EnsembleLoadOptions {
  readonly version: number;
  /** The repository: where members are found now and per request. */
  readonly members: VersionLookup;
  /** Labels of the ensemble's own outputs (label_filename), for classification. */
  readonly labels: ReadonlyMap<string, readonly string[]>;
  readonly statsRegistry?: StatsRegistry;
  /** When the load began (process.hrtime.bigint()), for nv_model_load_duration_secs. */
  readonly loadStart?: bigint;
  /** The server's response cache, for an ensemble that enables it at its top level. */
  readonly responseCache?: ResponseCache;
  readonly log?: Logger;
}

/**
 * Whether the ensemble's top level may use the response cache. Triton's rule: only when every step could
 * be cached too — none decoupled, none a sequence model (each step's own cache setting does not matter).
 */
function cacheableEnsemble(
  config: FrozenModelConfig,
  memberConfigs: readonly FrozenModelConfig[],
  decoupled: boolean,
  log: Logger | undefined,
): boolean {
  if (config.response_cache?.enable !== true) return false;
  const blocker = memberConfigs.find(
    (m) => m.model_transaction_policy?.decoupled === true || m.sequence_batching !== undefined,
  );
  if (!decoupled && blocker === undefined) return true;
  log?.warn(
    `ensemble '${config.name}' enables response_cache but its step model '${blocker?.name ?? ''}' is ` +
      `${blocker?.sequence_batching !== undefined ? 'a sequence model' : 'decoupled'}: the ensemble's ` +
      'responses are not cached',
  );
  return false;
}

export function loadEnsembleVersion(
  config: FrozenModelConfig,
  options: EnsembleLoadOptions,
): EnsembleVersion {
  const loadStart = options.loadStart ?? process.hrtime.bigint();
  const plan = planEnsemble(config);
  const memberConfigs = plan.steps.map((step) => {
    const version = step.modelVersion < 0 ? undefined : String(step.modelVersion);
    let member;
    try {
      member = options.members.getVersion(step.modelName, version);
    } catch (err) {
      const e = NereidError.from(err);
      throw invalidArg(`in ensemble '${config.name}', ${describeStep(step)}: ${e.message}`);
    }
    return member.config;
  });
  const check = checkMembers(config, plan, memberConfigs);
  // Triton (ensemble_utils.cc) always writes the decoupled-ness it computes into an ensemble's config, so
  // the config a client reads says `model_transaction_policy { decoupled: ... }` even when undeclared.
  const effective = freezeModelConfig({
    ...config,
    model_transaction_policy: { decoupled: check.decoupled },
  });
  return new EnsembleVersion({
    config: effective,
    version: options.version,
    plan,
    decoupledSteps: check.decoupledSteps,
    members: options.members,
    labels: options.labels,
    statsRegistry: options.statsRegistry,
    loadDurationNs: Number(process.hrtime.bigint() - loadStart),
    ...(options.responseCache !== undefined &&
      cacheableEnsemble(config, memberConfigs, check.decoupled, options.log) && {
        responseCache: options.responseCache,
        log: options.log,
      }),
  });
}
