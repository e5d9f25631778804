/**
 * Reading `--http-restricted-api` / `--grpc-restricted-protocol` values and the start-up warnings for
 * restriction and header-forwarding settings that are accepted as Triton accepts them but cannot do what
 * an operator likely meant. The syntax, its checks and the error texts are Triton's
 * (command_line_parser.cc: ParseRestrictedFeatureOption over ParseGenericConfigOption), so a command line
 * Triton refuses is refused here with the same words.
 */
import { invalidArg } from '../common/errors.js';
import {
  GRPC_RESTRICTED_HEADER_PREFIX,
  isRestrictedCategory,
  type HttpRestrictedCategory,
  type Restriction,
} from '../frontends/restricted.js';

export type RestrictionDraft = Partial<Record<HttpRestrictedCategory, Restriction>>;

/**
 * `<category>[,<category>...]:<key>=<value>`: the first ':' ends the categories, the first '=' after it
 * ends the key (so a key may hold ':' and a value ':' and '='); none of the three may be empty. Categories
 * are split on every ',' with nothing trimmed. A category may be restricted once, in one group only: a
 * second mention is refused even with the same key and value, as in Triton.
 */
export function parseRestrictedOption(
  arg: string,
  flag: 'http-restricted-api' | 'grpc-restricted-protocol',
  into: RestrictionDraft,
): void {
  const featureType = flag === 'http-restricted-api' ? 'api' : 'protocol';
  const keyPrefix = flag === 'http-restricted-api' ? '' : GRPC_RESTRICTED_HEADER_PREFIX;
  const colon = arg.indexOf(':');
  const equals = colon < 0 ? -1 : arg.indexOf('=', colon + 1);
  const categories = colon < 0 ? '' : arg.slice(0, colon);
  const key = equals < 0 ? '' : arg.slice(colon + 1, equals);
  const value = equals < 0 ? '' : arg.slice(equals + 1);
  if (categories === '' || key === '' || value === '') {
    throw invalidArg(`--${flag} option format is '<config name>:<setting>=<value>'. Got ${arg}`);
  }
  for (const category of categories.split(',')) {
    // Nereid's own categories (dashboard, openai) exist on HTTP only.
    if (!isRestrictedCategory(category, flag === 'http-restricted-api' ? 'http' : 'grpc')) {
      throw invalidArg(`unknown restricted ${featureType} '${category}'`);
    }
    if (into[category] !== undefined) {
      throw invalidArg(
        `restricted ${featureType} '${category}' can not be specified in multiple config groups`,
      );
    }
    into[category] = Object.freeze({ header: keyPrefix + key, value });
  }
}

/** Start-up warnings for settings that are valid, as in Triton, but almost certainly not what was meant. */
export function restrictionWarnings(
  grpcRestricted: RestrictionDraft,
  httpForwardPattern: string | undefined,
  grpcForwardPattern: string | undefined,
): string[] {
  const warnings: string[] = [];
  const byHeader = new Map<string, HttpRestrictedCategory[]>();
  for (const [category, r] of Object.entries(grpcRestricted) as [HttpRestrictedCategory, Restriction][]) {
    if (r.header === r.header.toLowerCase()) continue;
    byHeader.set(r.header, [...(byHeader.get(r.header) ?? []), category]);
  }
  for (const [header, categories] of byHeader) {
    warnings.push(
      `--grpc-restricted-protocol: gRPC metadata keys are lower-case on the wire, so no client can send ` +
        `'${header}' and ${categories.join(', ')} ${categories.length > 1 ? 'are' : 'is'} closed to every ` +
        `gRPC call (as in Triton); use a lower-case key`,
    );
  }
  for (const [flag, pattern] of [
    ['http-header-forward-pattern', httpForwardPattern],
    ['grpc-header-forward-pattern', grpcForwardPattern],
  ] as const) {
    if (pattern === '') {
      warnings.push(
        `--${flag} is empty: as in Triton (whose pattern is then just '(?i)'), every request header is ` +
          `forwarded to models as a parameter`,
      );
    }
  }
  return warnings;
}
