/**
 * Multiplexing by header (issue 30, a Nereid addition): a request may name a variant of the model it
 * addresses in the `nereid-model-variant` header (HTTP) or metadata key (gRPC), and is then served by the
 * repository's model `<model>.<variant>` — per-customer or fine-tuned copies of one model, each a model
 * folder of its own, behind one URL. Load balancers can hash on a header but not on a gRPC message's
 * model_name, so a client that sets the header lets them send each variant to one replica, whose on-demand
 * hot set then holds it (docs/kubernetes.md). Without the header nothing changes.
 */
import { invalidArg } from '../common/errors.js';

/** The header (HTTP) and metadata key (gRPC), lower case as both carry it. */
export const MODEL_VARIANT_HEADER = 'nereid-model-variant';

/** What a variant may be: a name that is safe in a folder name and in a metric label. */
const VARIANT = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;

/**
 * The model a request is served by: `model` itself without the header (or with an empty one), else
 * `<model>.<variant>`. A malformed variant is INVALID_ARG (HTTP 400); one naming no model of the
 * repository fails later, as any unknown model does (404).
 */
export function modelForVariant(model: string, header: string | readonly string[] | undefined): string {
  if (header === undefined) return model;
  if (typeof header !== 'string') {
    throw invalidArg(
      `header '${MODEL_VARIANT_HEADER}' must be given once, it was given ${header.length} times`,
    );
  }
  const variant = header.trim();
  if (variant === '') return model;
  if (!VARIANT.test(variant)) {
    throw invalidArg(
      `header '${MODEL_VARIANT_HEADER}' must be 1 to 128 letters, digits, '_', '.' or '-' starting with a letter or digit`,
    );
  }
  return `${model}.${variant}`;
}
