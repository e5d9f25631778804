/**
 * Request, input and output parameter values (KServe v2 `parameters`, gRPC InferParameter): the server, the
 * backends, the client and the model SDK carry the same values. Written once here.
 */

/** A parameter value; uint64/int64 values beyond 2^53 arrive as bigint. */
export type ParameterValue = string | number | boolean | bigint;
export type Parameters = Record<string, ParameterValue>;
