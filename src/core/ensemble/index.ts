/**
 * Ensembles (`platform: "ensemble"`, `ensemble_scheduling`): pipelines of models as a data-flow graph.
 * The loader calls loadEnsembleVersion(); the server serves any ServableVersion; the planner and the
 * member checks are pure and exported for tests and tools.
 */
export { EnsembleVersion, type EnsembleVersionParts } from './ensemble-version.js';
export { isEnsembleConfig, loadEnsembleVersion, type EnsembleLoadOptions } from './load.js';
export { checkMembers, dimsCompatible, type MemberCheck } from './members.js';
export {
  describeStep,
  planEnsemble,
  requestPlan,
  stepsFor,
  type EnsemblePlan,
  type PlannedStep,
  type RequestPlan,
  type StepBinding,
} from './plan.js';
export { StepLimiter } from './limiter.js';
export type { ServableVersion, VersionLookup } from '../model/servable.js';
export { shapeForConsumer } from './shapes.js';
