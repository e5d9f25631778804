"""The control protocol between the host and this stub, written down once on this side (its TypeScript
twin is src/backends/python/protocol.ts; src/backends/python/protocol.test.ts sends every message type
through both): each message type's number and the shape of the JSON header it carries, with readable
field names. Tensor bytes never travel in these headers: a tensor descriptor says where they are (the
frame's blob, or the sender's /dev/shm file).

The shapes are TypedDicts, so a decoded header is the dict json.loads made, with no object built per
message; optional fields sit in a `total=False` part (NotRequired needs Python 3.11, stubs run on 3.10).
Every message the stub sends is built here, by the builders after the shapes: the runtime and the model
API only call them. EXECUTE_DONE, the one answer of every default-mode batch, has a fixed binary header
(its layout is written down at execute_done() below and in protocol.ts, which decodes it); its ExecuteDone
shape here names the fields it carries. The other hot messages (RESPONSE, BLS_REQUEST and their tensor
descriptors) are assembled as JSON text rather than by json.dumps, which costs twice as much per response;
protocol.test.ts checks that what they write is exactly these shapes.
"""

from __future__ import annotations

import json
import json.encoder
import struct
from typing import Any, Literal, NotRequired, TypedDict

# --- message types (MessageType in protocol.ts) -------------------------------------------------------------
# host -> stub
INIT = 1
AUTOCOMPLETE = 2
EXECUTE = 3
CANCEL = 4
BLS_RESPONSE = 5
FREE = 6
FINALIZE = 7
MODEL_CONTROL_DONE = 8
METRICS_QUERY = 9
CREDIT = 10
# stub -> host
HELLO = 20
INIT_DONE = 21
AUTOCOMPLETE_DONE = 22
RESPONSE = 23
EXECUTE_DONE = 24
BLS_REQUEST = 25
BLS_CANCEL = 26
LOG = 27
FINALIZE_DONE = 28
FATAL = 29
MODEL_CONTROL = 30
METRICS = 31
BLS_CREDIT = 32


# --- the pieces messages are made of -----------------------------------------------------------------------


class StubTensor(TypedDict):
    name: str
    datatype: str
    shape: list[int]
    # True: `offset` is in the sender's /dev/shm file; False: in the frame's blob.
    in_shm: bool
    offset: int
    byte_size: int


class _StubError(TypedDict):
    code: int  # TRITONSERVER_Error_Code
    message: str


class StubError(_StubError, total=False):
    # The model answered with this error (an InferenceResponse carrying a TritonError).
    from_model: bool
    # What a decoupled `async def execute` raised after it returned, for the host to locate and log.
    info: ErrorInfo


class _StubRequest(TypedDict):
    rid: int  # the request's number on this stub: responses, cancellations, reschedules name it
    request_id: str
    correlation_id: str  # as text; correlation_is_string False = an unsigned integer
    correlation_is_string: bool
    flags: int
    parameters: str  # a JSON object as text (request.parameters())
    requested_outputs: list[str]
    inputs: list[StubTensor]


class StubRequest(_StubRequest, total=False):
    """One request of an EXECUTE batch."""

    cancelled: bool  # already cancelled when dispatched
    traced: bool  # the request is traced: a BLS call given request.trace() joins its trace
    trace_context: str  # W3C trace context JSON (OpenTelemetry mode), request.trace().get_context()


class _StubResponse(TypedDict):
    rid: int
    final: bool


class StubResponse(_StubResponse, total=False):
    """One response: inside EXECUTE_DONE (default mode) or a RESPONSE message of its own."""

    outputs: list[StubTensor]
    parameters: str
    error: StubError
    undeclared: list[str]  # outputs the model returned that its config does not declare (pruned)


# --- host -> stub ------------------------------------------------------------------------------------------


class BackendPackage(TypedDict):
    """A Python-based backend's folder, imported as a package of this name (its model.py a module of it)."""

    name: str
    dir: str


class Init(TypedDict):
    name: str  # the instance name
    model_path: str
    backend_package: NotRequired[BackendPackage]
    decoupled: bool
    shm_threshold: int
    shm_initial: int
    shm_growth: int
    # Responses each request may send before the host grants more (CREDIT); absent or 0 = no limit.
    response_window: NotRequired[int]
    # Responses past its credit a request may send from the asyncio thread (which must not wait).
    response_overdraft: NotRequired[int]
    args: dict[str, str]  # initialize(args), Triton's keys


class AutoComplete(TypedDict):
    name: str
    model_path: str
    backend_package: NotRequired[BackendPackage]
    args: NotRequired[dict[str, str]]  # with backend_package: model_repository and model_version
    config: str  # the model config as JSON text


class Execute(TypedDict):
    batch: int
    requests: list[StubRequest]


class Cancel(TypedDict):
    rid: int


class _BlsResponse(TypedDict):
    call: int
    final: bool


class BlsResponse(_BlsResponse, total=False):
    outputs: list[StubTensor]
    parameters: str
    error: StubError


class Free(TypedDict):
    ranges: list[tuple[int, int]]  # [offset, size] of this stub's /dev/shm file, read by the host


class Finalize(TypedDict):
    pass


class _ModelControlDone(TypedDict):
    call: int


class ModelControlDone(_ModelControlDone, total=False):
    ready: bool
    error: StubError


class MetricsQuery(TypedDict):
    query: int


class Credit(TypedDict):
    """The request may send `n` more responses (its client took that many)."""

    rid: int
    n: int


# --- stub -> host ------------------------------------------------------------------------------------------


class Hello(TypedDict):
    pid: int
    python: str
    numpy: str


class ErrorInfo(TypedDict, total=False):
    """What the model raised, for the host to locate and log (src/backends/model-errors.ts): the host builds
    the client's text from the frames inside the model folder and logs `traceback` whole."""

    type: str
    message: str
    frames: list[tuple[str, int, str]]  # (file, line, function), innermost first
    traceback: str
    phase: str  # initialize only: "import" (model.py failed to import) or "initialize"


class InitDone(TypedDict, total=False):
    error: str
    error_info: ErrorInfo


class AutoCompleteDone(TypedDict, total=False):
    config: str
    error: str


class _ExecuteDone(TypedDict):
    batch: int


class ExecuteDone(_ExecuteDone, total=False):
    error: str  # the whole batch failed
    error_info: ErrorInfo
    responses: list[StubResponse]
    rescheduled: list[int]  # rids the model rescheduled
    started: int  # time.monotonic_ns() when the stub began the batch (the host's clock too)
    finished: int  # ... and when its answer was ready


class _BlsRequest(TypedDict):
    call: int
    model_name: str
    model_version: int  # -1 = the default
    request_id: str
    correlation_id: str
    correlation_is_string: bool
    flags: int
    timeout_us: int  # 0 = none
    parameters: str
    requested_outputs: list[str]
    inputs: list[StubTensor]


class BlsRequest(_BlsRequest, total=False):
    trace_rid: int  # the executing request whose trace the call joins (`trace=request.trace()`)
    # BLS_RESPONSE frames the host may send ahead of what the iterator took (BLS_CREDIT grants more).
    window: int


class BlsCancel(TypedDict):
    call: int


class BlsCredit(TypedDict):
    """The BLS call's iterator took `n` more responses: the host may send that many more."""

    call: int
    n: int


class Log(TypedDict):
    level: int  # pb_utils.Logger.LogLevel
    message: str
    file: str
    line: int


class FinalizeDone(TypedDict):
    pass


class Fatal(TypedDict):
    message: str


class _ModelControlOp(TypedDict):
    op: Literal["load", "unload", "ready"]
    model_name: str


class ModelControlOp(_ModelControlOp, total=False):
    """A ModelControl without its call number: what api.py asks for; the runtime numbers it."""

    config: str  # load: the config override JSON ('' = none)
    # load: the `file:` overrides as [name, offset, size] in the frame's blob
    files: list[tuple[str, int, int]]
    unload_dependents: bool
    version: str  # ready: '' = any


class ModelControl(ModelControlOp):
    call: int


class Metrics(TypedDict):
    query: int
    families: list[dict[str, Any]]  # metrics.snapshot()


# Which shape each message type carries (protocol.test.ts goes through every entry).
SHAPES: dict[int, type] = {
    INIT: Init,
    AUTOCOMPLETE: AutoComplete,
    EXECUTE: Execute,
    CANCEL: Cancel,
    BLS_RESPONSE: BlsResponse,
    FREE: Free,
    FINALIZE: Finalize,
    MODEL_CONTROL_DONE: ModelControlDone,
    METRICS_QUERY: MetricsQuery,
    CREDIT: Credit,
    HELLO: Hello,
    INIT_DONE: InitDone,
    AUTOCOMPLETE_DONE: AutoCompleteDone,
    RESPONSE: StubResponse,
    EXECUTE_DONE: ExecuteDone,
    BLS_REQUEST: BlsRequest,
    BLS_CANCEL: BlsCancel,
    LOG: Log,
    FINALIZE_DONE: FinalizeDone,
    FATAL: Fatal,
    MODEL_CONTROL: ModelControl,
    METRICS: Metrics,
    BLS_CREDIT: BlsCredit,
}


# json.dumps's own C encoder of one string (ensure_ascii), without json.dumps's Python layers.
_encode_string = json.encoder.encode_basestring_ascii

# --- fast encoders for the hot messages (the shapes above, checked by protocol.test.ts) --------------------

# The start of a tensor descriptor, up to "in_shm", by (name, datatype, *shape): a model's outputs repeat
# them, so most descriptors are one lookup and one short format.
_TENSOR_HEAD: dict[tuple[Any, ...], str] = {}


def tensor_json(name: str, datatype: str, shape: list[int], in_shm: bool, offset: int, size: int) -> str:
    """A StubTensor as JSON text."""
    key = (name, datatype, *shape)
    head = _TENSOR_HEAD.get(key)
    if head is None:
        dims = ",".join(map(str, shape))
        head = f'{{"name":{json.dumps(name)},"datatype":"{datatype}","shape":[{dims}],"in_shm":'
        if len(_TENSOR_HEAD) < 4096:
            _TENSOR_HEAD[key] = head
    return f'{head}{"true" if in_shm else "false"},"offset":{offset},"byte_size":{size}}}'


def response_json(
    rid: int,
    final: bool,
    outputs: list[str] | None,
    parameters: str = "",
    undeclared: list[str] | None = None,
) -> str:
    """A StubResponse as JSON text; `outputs` are tensor_json texts (None: a flag-only response);
    `undeclared`: names of outputs the model returned that its config does not declare (pruned)."""
    head = f'{{"rid":{rid},"final":{"true" if final else "false"}'
    if outputs is None:
        return head + "}"
    extra = f',"parameters":{json.dumps(parameters)}' if parameters and parameters != "{}" else ""
    if undeclared:
        extra += f',"undeclared":{json.dumps(undeclared)}'
    return head + f',"outputs":[{",".join(outputs)}]{extra}}}'


def error_response_json(
    rid: int, message: str, code: int, from_model: bool = False, info: ErrorInfo | None = None
) -> str:
    """A final StubResponse carrying an error, as JSON text (`info`: what the model raised)."""
    mine = ',"from_model":true' if from_model else ""
    if info is not None:
        mine += f',"info":{json.dumps(info)}'
    return f'{{"rid":{rid},"final":true,"error":{{"code":{code},"message":{json.dumps(message)}{mine}}}}}'


# --- EXECUTE_DONE: a fixed binary header (protocol.ts decodeExecuteDone reads it) -------------------------
#
# Little-endian: u32 batch | f64 started | f64 finished | u32 responses | u32 rescheduled | u32 tail bytes
# | u32 rid x rescheduled | tail (a JSON object {error, error_info} when the whole batch failed, else nothing)
# | responses, each a u8 kind then:
#   0 (outputs): u32 rid | u8 flags (1 final, 2 parameters, 4 undeclared) | u16 outputs | each output:
#       u16 name bytes | name | u8 datatype bytes | datatype | u8 dims | f64 x dims | u8 in_shm | f64 offset
#       | f64 byte_size
#     then, by its flags, u32 bytes + the parameters' JSON object text, u32 bytes + undeclared's JSON list
#   1 (JSON): u32 bytes | a StubResponse as JSON text (a response carrying an error)

_DONE_HEAD = struct.Struct("<IddIII")
_ENTRY_HEAD = struct.Struct("<BIBH")
_U32 = struct.Struct("<I")
_TENSOR_TAIL = struct.Struct("<Bdd")
_FINAL, _PARAMETERS, _UNDECLARED = 1, 2, 4
# The fixed start of a binary tensor descriptor (name, datatype, dims) by (name, datatype, *shape).
_TENSOR_BIN_HEAD: dict[tuple[Any, ...], bytes] = {}


def tensor_bin(name: str, datatype: str, shape: list[int], in_shm: bool, offset: int, size: int) -> bytes:
    """A tensor descriptor of an EXECUTE_DONE response (the layout above)."""
    key = (name, datatype, *shape)
    head = _TENSOR_BIN_HEAD.get(key)
    if head is None:
        n, d = name.encode("utf-8"), datatype.encode("ascii")
        head = struct.pack(f"<H{len(n)}sB{len(d)}sB{len(shape)}d", len(n), n, len(d), d, len(shape), *shape)
        if len(_TENSOR_BIN_HEAD) < 4096:
            _TENSOR_BIN_HEAD[key] = head
    return head + _TENSOR_TAIL.pack(in_shm, offset, size)


def _sized(text: str) -> bytes:
    data = text.encode("utf-8")
    return _U32.pack(len(data)) + data


def response_entry(
    rid: int, final: bool, outputs: list[bytes], parameters: str = "", undeclared: list[str] | None = None
) -> bytes:
    """A response of EXECUTE_DONE with outputs (tensor_bin descriptors), in the binary layout."""
    flags = _FINAL if final else 0
    tail = b""
    if parameters and parameters != "{}":
        flags |= _PARAMETERS
        tail = _sized(parameters)
    if undeclared:
        flags |= _UNDECLARED
        tail += _sized(json.dumps(undeclared))
    return _ENTRY_HEAD.pack(0, rid, flags, len(outputs)) + b"".join(outputs) + tail


def json_entry(response: str) -> bytes:
    """A response of EXECUTE_DONE given as StubResponse JSON text (error_json's)."""
    return b"\x01" + _sized(response)


def execute_done(
    batch: int,
    responses: list[bytes],
    rescheduled: list[int],
    started: int,
    finished: int,
    failure: tuple[str, ErrorInfo] | None = None,
) -> bytes:
    """An EXECUTE_DONE header; `responses` are response_entry/json_entry bytes, `failure` the batch's error
    text and what execute raised."""
    tail = b"" if failure is None else json.dumps({"error": failure[0], "error_info": failure[1]}).encode()
    head = _DONE_HEAD.pack(batch, started, finished, len(responses), len(rescheduled), len(tail))
    if rescheduled:
        head += struct.pack(f"<{len(rescheduled)}I", *rescheduled)
    return head + tail + b"".join(responses)


def error_json(
    rid: int,
    message: str,
    code: int,
    from_model: bool = False,
    info: ErrorInfo | None = None,
    final: bool = True,
) -> str:
    """A StubResponse carrying an error as JSON text; not `final` only for a decoupled model's error response
    that is not its last."""
    if final:
        return error_response_json(rid, message, code, from_model, info)
    mine = ',"from_model":true' if from_model else ""
    if info is not None:
        mine += f',"info":{json.dumps(info)}'
    return f'{{"rid":{rid},"final":false,"error":{{"code":{code},"message":{json.dumps(message)}{mine}}}}}'


def bls_request_json(
    call: int,
    model_name: str,
    model_version: int,
    request_id: str,
    correlation_id: str | int,
    flags: int,
    timeout_us: int,
    parameters: str,
    requested_outputs: list[str],
    inputs: list[str],
    trace_rid: int = 0,
    window: int = 0,
) -> str:
    """A BlsRequest as JSON text; `inputs` are tensor_json texts; `trace_rid` 0 = not traced; `window`
    0 = no flow control of the responses. Written as text, as tensor_json is (every BLS call sends one):
    json.dumps of a dict cost more than the rest of the call's Python."""
    text = isinstance(correlation_id, str)
    outputs = ",".join(map(_json_string, requested_outputs))
    head = (
        f'{{"call":{int(call)},"model_name":{_json_string(model_name)},"model_version":{int(model_version)},'
        f'"request_id":{_json_string(request_id)},"correlation_id":{_json_string(str(correlation_id))},'
        f'"correlation_is_string":{"true" if text else "false"},"flags":{int(flags)},'
        f'"timeout_us":{int(timeout_us)},"parameters":{_json_string(parameters)},'
        f'"requested_outputs":[{outputs}]'
    )
    if trace_rid:
        head += f',"trace_rid":{int(trace_rid)}'  # the host traces the call as that request's child
    if window:
        head += f',"window":{int(window)}'
    return f'{head},"inputs":[{",".join(inputs)}]}}'


def _json_string(value: object) -> str:
    """A str as a JSON string, as json.dumps writes it (ASCII-escaped); anything else as json.dumps has it."""
    if type(value) is str:
        return _encode_string(value)
    return json.dumps(value)


# --- builders for the other messages the stub sends ---------------------------------------------------------


def hello(pid: int, python: str, numpy: str) -> Hello:
    return {"pid": pid, "python": python, "numpy": numpy}


def init_done() -> InitDone:
    return {}


def init_failed(error: str, info: ErrorInfo) -> InitDone:
    return {"error": error, "error_info": info}


def autocomplete_done(config: str) -> AutoCompleteDone:
    return {"config": config}


def autocomplete_failed(error: str) -> AutoCompleteDone:
    return {"error": error}


def execute_failed(batch: int, error: str, info: ErrorInfo, started: int, finished: int) -> bytes:
    return execute_done(batch, [], [], started, finished, (error, info))


def bls_cancel(call: int) -> BlsCancel:
    return {"call": call}


def bls_credit(call: int, n: int) -> BlsCredit:
    return {"call": call, "n": n}


def log(level: int, message: str, file: str, line: int) -> Log:
    return {"level": level, "message": message, "file": file, "line": line}


def finalize_done() -> FinalizeDone:
    return {}


def fatal(message: str) -> Fatal:
    return {"message": message}


def load_op(model_name: str, config: str, files: list[tuple[str, int, int]]) -> ModelControlOp:
    return {"op": "load", "model_name": model_name, "config": config, "files": files}


def unload_op(model_name: str, unload_dependents: bool) -> ModelControlOp:
    return {"op": "unload", "model_name": model_name, "unload_dependents": unload_dependents}


def ready_op(model_name: str, version: str) -> ModelControlOp:
    return {"op": "ready", "model_name": model_name, "version": version}


def model_control(call: int, op: ModelControlOp) -> ModelControl:
    return {**op, "call": call}


def metrics_reply(query: int, families: list[dict[str, Any]]) -> Metrics:
    return {"query": query, "families": families}
