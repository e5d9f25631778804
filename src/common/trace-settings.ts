/**
 * The trace extension's settings as Triton answers them (`GET /v2/trace/setting`, gRPC TraceSetting): each
 * key maps to one string or a list of strings (trace_level). The core answers them, the client returns them.
 */
export type TraceSettings = Record<string, string | string[]>;
