"""The control protocol between the host and this stub, written down once on this side (its TypeScript
twin is src/backends/python/protocol.ts; src/backends/python/protocol.test.ts sends every message type
through both): each message type's number and the shape of the JSON header it carries, with readable
field names. Tensor bytes never travel in these headers: a tensor descriptor says where they are (the
frame's blob, or the sender's /dev/shm file).

The shapes are TypedDicts, so a decoded header is the dict json.loads made, with no object built per
message; optional fields sit in a `total=False` part (NotRequired needs Python 3.11, stubs run on 3.10).
The hot messages (EXECUTE_DONE, RESPONSE and their tensor descriptors) are assembled as JSON text by the
encoders at the end rather than by json.dumps, which costs twice as much per response; protocol.test.ts
checks that what they write is exactly these shapes.
"""

from __future__ import annotations

import json
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


# --- the pieces messages are made of -----------------------------------------------------------------------


class WireTensor(TypedDict):
    name: str
    datatype: str
    shape: list[int]
    # True: `offset` is in the sender's /dev/shm file; False: in the frame's blob.
    in_shm: bool
    offset: int
    byte_size: int


class _WireError(TypedDict):
    code: int  # TRITONSERVER_Error_Code
    message: str


class WireError(_WireError, total=False):
    # The model answered with this error (an InferenceResponse carrying a TritonError).
    from_model: bool
    # What a decoupled `async def execute` raised after it returned, for the host to locate and log.
    info: ErrorInfo


class _WireRequest(TypedDict):
    rid: int  # the request's number on this stub: responses, cancellations, reschedules name it
    request_id: str
    correlation_id: str  # as text; correlation_is_string False = an unsigned integer
    correlation_is_string: bool
    flags: int
    parameters: str  # a JSON object as text (request.parameters())
    requested_outputs: list[str]
    inputs: list[WireTensor]


class WireRequest(_WireRequest, total=False):
    """One request of an EXECUTE batch."""

    cancelled: bool  # already cancelled when dispatched
    traced: bool  # the request is traced: a BLS call given request.trace() joins its trace
    trace_context: str  # W3C trace context JSON (OpenTelemetry mode), request.trace().get_context()


class _WireResponse(TypedDict):
    rid: int
    final: bool


class WireResponse(_WireResponse, total=False):
    """One response: inside EXECUTE_DONE (default mode) or a RESPONSE message of its own."""

    outputs: list[WireTensor]
    parameters: str
    error: WireError
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
    args: dict[str, str]  # initialize(args), Triton's keys


class AutoComplete(TypedDict):
    name: str
    model_path: str
    backend_package: NotRequired[BackendPackage]
    args: NotRequired[dict[str, str]]  # with backend_package: model_repository and model_version
    config: str  # the model config as JSON text


class Execute(TypedDict):
    batch: int
    requests: list[WireRequest]


class Cancel(TypedDict):
    rid: int


class _BlsResponse(TypedDict):
    call: int
    final: bool


class BlsResponse(_BlsResponse, total=False):
    outputs: list[WireTensor]
    parameters: str
    error: WireError


class Free(TypedDict):
    ranges: list[tuple[int, int]]  # [offset, size] of this stub's /dev/shm file, read by the host


class Finalize(TypedDict):
    pass


class _ModelControlDone(TypedDict):
    call: int


class ModelControlDone(_ModelControlDone, total=False):
    ready: bool
    error: WireError


class MetricsQuery(TypedDict):
    query: int


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
    responses: list[WireResponse]
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
    inputs: list[WireTensor]


class BlsRequest(_BlsRequest, total=False):
    trace_rid: int  # the executing request whose trace the call joins (`trace=request.trace()`)


class BlsCancel(TypedDict):
    call: int


class Log(TypedDict):
    level: int  # pb_utils.Logger.LogLevel
    message: str
    file: str
    line: int


class FinalizeDone(TypedDict):
    pass


class Fatal(TypedDict):
    message: str


class _ModelControl(TypedDict):
    call: int
    op: Literal["load", "unload", "ready"]
    model_name: str


class ModelControl(_ModelControl, total=False):
    config: str  # load: the config override JSON ('' = none)
    # load: the `file:` overrides as [name, offset, size] in the frame's blob
    files: list[tuple[str, int, int]]
    unload_dependents: bool
    version: str  # ready: '' = any


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
    HELLO: Hello,
    INIT_DONE: InitDone,
    AUTOCOMPLETE_DONE: AutoCompleteDone,
    RESPONSE: WireResponse,
    EXECUTE_DONE: ExecuteDone,
    BLS_REQUEST: BlsRequest,
    BLS_CANCEL: BlsCancel,
    LOG: Log,
    FINALIZE_DONE: FinalizeDone,
    FATAL: Fatal,
    MODEL_CONTROL: ModelControl,
    METRICS: Metrics,
}


# --- fast encoders for the hot messages (the shapes above, checked by protocol.test.ts) --------------------

# The start of a tensor descriptor, up to "in_shm", by (name, datatype, *shape): a model's outputs repeat
# them, so most descriptors are one lookup and one short format.
_TENSOR_HEAD: dict[tuple[Any, ...], str] = {}


def tensor_json(name: str, datatype: str, shape: list[int], in_shm: bool, offset: int, size: int) -> str:
    """A WireTensor as JSON text."""
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
    """A WireResponse as JSON text; `outputs` are tensor_json texts (None: a flag-only response);
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
    """A final WireResponse carrying an error, as JSON text (`info`: what the model raised)."""
    mine = ',"from_model":true' if from_model else ""
    if info is not None:
        mine += f',"info":{json.dumps(info)}'
    return f'{{"rid":{rid},"final":true,"error":{{"code":{code},"message":{json.dumps(message)}{mine}}}}}'


def execute_done_json(
    batch: int, responses: list[str], rescheduled: list[int], started: int, finished: int
) -> str:
    """An ExecuteDone without error as JSON text; `responses` are response texts."""
    text = f'{{"batch":{batch},"started":{started},"finished":{finished}'
    if responses:
        text += f',"responses":[{",".join(responses)}]'
    if rescheduled:
        text += f',"rescheduled":[{",".join(map(str, rescheduled))}]'
    return text + "}"
