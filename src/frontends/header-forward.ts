/**
 * `--http-header-forward-pattern` / `--grpc-header-forward-pattern`: request headers (HTTP) or metadata
 * (gRPC) whose name matches the pattern reach the model as string request parameters, as Triton forwards
 * them (http_server.cc ForwardHeaders, infer_handler.h ForwardHeadersAsParameters).
 *
 * Triton's rules, kept here: the pattern is RE2 syntax, matched anywhere in the name (PartialMatch), case-
 * insensitive because Triton puts `(?i)` before it (a pattern starting `(?-i)` turns that off); an empty
 * pattern is just `(?i)` and so forwards every header. HTTP names keep the case the client sent; gRPC keys
 * are lower-case on the wire; `-bin` metadata is forwarded decoded (up to its first NUL byte, as Triton
 * passes a C string). gRPC's own transport metadata (pseudo-headers, `te`, `content-type`, `grpc-*`) never
 * reaches the handler in Triton and is not forwarded. A header repeated, or named like a parameter of the
 * request body, ends up with the last value: Triton hands the model every copy and a Python model's
 * `json.loads(request.parameters())` keeps the last one, which is the header's.
 *
 * Nereid's own rule: names the server consumes as parameters (`sequence_id`, `priority`, `timeout`,
 * `sequence_start`, `sequence_end`, `binary_data_output`, `triton_*`) are never forwarded, so a header can
 * not change how a request is scheduled. RE2 (re2js, a port of it) runs in linear time, so no header name a
 * client sends can make the match slow, whatever pattern the operator chose.
 */
import { RE2JS } from 're2js';
import { isServerParameter } from '../backend-api/backend.js';
import { invalidArg } from '../common/errors.js';
import { forwardedParameters, type Parameters } from '../core/index.js';

/** Compiles a forward pattern as Triton does (`(?i)` + pattern); a syntax error is INVALID_ARG naming the flag. */
export function compileForwardPattern(flag: string, pattern: string): RE2JS {
  try {
    return RE2JS.compile('(?i)' + pattern);
  } catch (err) {
    throw invalidArg(
      `--${flag}: '${pattern}' is not a valid RE2 regular expression: ${(err as Error).message}`,
    );
  }
}

/** Names seen recently and whether they matched; bounded, so hostile names cannot grow it. */
const CACHE_LIMIT = 256;

function isGrpcTransportKey(name: string): boolean {
  return (
    name.charCodeAt(0) === 0x3a /* ':' */ ||
    name === 'te' ||
    name === 'content-type' ||
    name.startsWith('grpc-')
  );
}

function hasHighBytes(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0x7f) return true;
  return false;
}

/** Forwards matching headers of one protocol; made once per frontend. */
export class HeaderForwarder {
  private readonly regex: RE2JS;
  private readonly matched = new Map<string, boolean>();

  constructor(
    pattern: string,
    private readonly protocol: 'http' | 'grpc',
  ) {
    this.regex = compileForwardPattern(`${protocol}-header-forward-pattern`, pattern);
  }

  /** The parameters to add to a request from its raw name/value header list, or undefined when none match. */
  parameters(rawHeaders: readonly string[]): Record<string, string> | undefined {
    let out: Record<string, string> | undefined;
    for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
      const name = rawHeaders[i];
      if (this.protocol === 'grpc' && isGrpcTransportKey(name)) continue;
      if (!this.matches(name) || isServerParameter(name)) continue;
      (out ??= Object.create(null) as Record<string, string>)[name] = this.value(name, rawHeaders[i + 1]);
    }
    return out;
  }

  private matches(name: string): boolean {
    let hit = this.matched.get(name);
    if (hit === undefined) {
      hit = this.regex.test(name);
      if (this.matched.size >= CACHE_LIMIT) this.matched.clear();
      this.matched.set(name, hit);
    }
    return hit;
  }

  /** The value a model sees: Node gives header bytes one char each; Triton passes them on as UTF-8 text. */
  private value(name: string, raw: string): string {
    if (this.protocol === 'grpc' && name.endsWith('-bin')) {
      const bytes = Buffer.from(raw, 'base64');
      const nul = bytes.indexOf(0);
      return (nul === -1 ? bytes : bytes.subarray(0, nul)).toString('utf8');
    }
    return hasHighBytes(raw) ? Buffer.from(raw, 'latin1').toString('utf8') : raw;
  }
}

/**
 * A request with forwarded headers added to its parameters (the core's forwardedParameters rule, which
 * an inference call applies: core/call.ts).
 */
export function withForwarded<T extends { readonly parameters?: Readonly<Parameters> }>(
  request: T,
  forwarded: Readonly<Record<string, string>> | undefined,
): T {
  if (forwarded === undefined) return request;
  return { ...request, parameters: forwardedParameters(request.parameters, forwarded) };
}
