"""The objects a Triton `model.py` works with, re-exported by `triton_python_backend_utils`: Tensor,
InferenceRequest (incoming, and outgoing for BLS), InferenceResponse, InferenceResponseSender,
ResponseIterator, TritonError, TritonModelException, Logger, MetricFamily/Metric, PreferredMemory and
InferenceTrace (metrics.py holds the metric classes). Names, signatures, error texts and semantics follow
Triton's python_backend.

Input tensors are numpy views over the bytes the host delivered (a /dev/shm mapping or the frame that
carried them): valid while the request is being answered; copy what you keep longer.
"""

from __future__ import annotations

import asyncio
import collections
import enum
import json
import os
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from math import prod
from typing import Any

import numpy as np
import numpy.typing as npt

from . import channel as _channel
from . import messages as _messages
from .dtypes import (
    CODE_TO_NAME,
    ITEM_SIZE,
    NAME_TO_CODE,
    deserialize_bytes_tensor,
    numpy_to_triton_type,
    serialize_bytes,
    triton_to_numpy_type,
)

# Defined in modules of their own, exported from here with the rest of the model-facing API.
from .errors import TritonModelException as TritonModelException
from .metrics import Metric as Metric
from .metrics import MetricFamily as MetricFamily
from .metrics import MetricKind as MetricKind

TRITONSERVER_REQUEST_FLAG_SEQUENCE_START = 1
TRITONSERVER_REQUEST_FLAG_SEQUENCE_END = 2
TRITONSERVER_RESPONSE_COMPLETE_FINAL = 1
TRITONSERVER_REQUEST_RELEASE_ALL = 1
TRITONSERVER_REQUEST_RELEASE_RESCHEDULE = 2


class TritonError:
    """An error attached to a response: `InferenceResponse(error=TritonError(msg, code))`."""

    class ErrorCode(enum.IntEnum):
        UNKNOWN = 0
        INTERNAL = 1
        NOT_FOUND = 2
        INVALID_ARG = 3
        UNAVAILABLE = 4
        UNSUPPORTED = 5
        ALREADY_EXISTS = 6
        CANCELLED = 7

    UNKNOWN = ErrorCode.UNKNOWN
    INTERNAL = ErrorCode.INTERNAL
    NOT_FOUND = ErrorCode.NOT_FOUND
    INVALID_ARG = ErrorCode.INVALID_ARG
    UNAVAILABLE = ErrorCode.UNAVAILABLE
    UNSUPPORTED = ErrorCode.UNSUPPORTED
    ALREADY_EXISTS = ErrorCode.ALREADY_EXISTS
    CANCELLED = ErrorCode.CANCELLED

    def __init__(self, message: str, code: int = ErrorCode.INTERNAL) -> None:
        if message is None:
            raise TypeError("TritonError message must not be None")
        self._message = str(message)
        try:
            self._code = TritonError.ErrorCode(int(code))
        except ValueError:
            raise TritonModelException(f"unknown TritonError code {code!r}") from None

    def code(self) -> TritonError.ErrorCode:
        return self._code

    def message(self) -> str:
        return self._message

    def __str__(self) -> str:
        return self._message

    def __repr__(self) -> str:
        return f"TritonError({self._message!r}, {self._code.name})"


class MemoryType(enum.IntEnum):
    TRITONSERVER_MEMORY_GPU = 0
    TRITONSERVER_MEMORY_CPU = 1


TRITONSERVER_MEMORY_GPU = MemoryType.TRITONSERVER_MEMORY_GPU
TRITONSERVER_MEMORY_CPU = MemoryType.TRITONSERVER_MEMORY_CPU


class PreferredMemory:
    """Accepted for compatibility; Nereid has no GPU memory, so every tensor is on the CPU."""

    def __init__(self, preferred_memory_type: int, preferred_device_id: int = 0) -> None:
        self.preferred_memory_type = preferred_memory_type
        self.preferred_device_id = preferred_device_id


class InferenceTrace:
    def __init__(self, context: str | None = None) -> None:
        self._context = context
        # The stub's id of the traced request this trace belongs to (0: none): a BLS request given this
        # trace tells the host, which traces the call as that request's child.
        self._rid = 0

    def get_context(self) -> str | None:
        return self._context or None


# --- tensors -----------------------------------------------------------------------------------------------

# numpy dtype (native byte order) -> datatype name, and back, for the numeric types numpy holds (the fast
# paths of Tensor; BYTES, BF16 and byte-swapped arrays take the general ones).
_NATIVE_DATATYPE: dict[np.dtype[Any], str] = {}
_NUMPY_DTYPE: dict[str, np.dtype[Any]] = {}
for _code, _datatype in CODE_TO_NAME.items():
    _np_type = triton_to_numpy_type(_code) if _code not in (13, 14) else None
    if _np_type is not None:
        _NATIVE_DATATYPE[np.dtype(_np_type)] = _datatype
        _NUMPY_DTYPE[_datatype] = np.dtype(_np_type)


class Tensor:
    """A named tensor over a numpy array (Triton's `pb_utils.Tensor(name, numpy_array)`)."""

    __slots__ = ("_array", "_dtype", "_name", "_raw", "_shape")
    _name: str
    _dtype: str
    _shape: list[int]
    _array: npt.NDArray[Any] | None  # made from _raw on demand
    _raw: memoryview | None  # the bytes as delivered (inputs, BLS results)

    def __init__(self, name: str, data: Any) -> None:
        if not isinstance(name, str):
            raise TritonModelException("Tensor name must be a string")
        array = data if isinstance(data, np.ndarray) else np.asarray(data)
        datatype = _NATIVE_DATATYPE.get(array.dtype)
        if datatype is not None:
            # The common case, a numeric array in native byte order: one lookup decides it.
            self._name = name
            self._dtype = datatype
            self._shape = list(array.shape)
            self._array = array
            self._raw = None
            return
        if array.dtype.kind == "U":
            # Triton refuses unicode arrays; encoding them as UTF-8 BYTES is what every model wants.
            array = np.char.encode(array, "utf-8").astype(np.object_)
        code = numpy_to_triton_type(array.dtype)
        if code is None:
            # Triton's text first (clients match on it), then which tensor and dtype.
            raise TritonModelException(
                f"NumPy dtype is not supported. Tensor '{name}' is {array.dtype};"
                " BYTES tensors take np.object_ or np.bytes_ arrays."
            )
        if code != 13 and array.dtype.byteorder == ">":
            array = array.astype(array.dtype.newbyteorder("="))
        self._name = name
        self._dtype = CODE_TO_NAME[code]
        self._shape = list(array.shape)
        self._array = array
        self._raw = None

    @classmethod
    def _wire(cls, name: str, datatype: str, shape: list[int], raw: memoryview) -> Tensor:
        """A tensor over bytes in Triton's wire form (the host's inputs, BLS results); numpy on demand.
        `shape` is the decoded header's own list of ints, kept as it is."""
        t = cls.__new__(cls)
        t._name = name
        t._dtype = datatype
        t._shape = shape
        t._array = None
        t._raw = raw
        return t

    def name(self) -> str:
        return self._name

    def triton_dtype(self) -> int:
        return NAME_TO_CODE[self._dtype]

    def shape(self) -> list[int]:
        return list(self._shape)

    def is_cpu(self) -> bool:
        return True

    def as_numpy(self) -> npt.NDArray[Any]:
        array = self._array
        if array is None:
            raw = self._raw
            dtype = _NUMPY_DTYPE.get(self._dtype)
            if dtype is not None and raw is not None and raw.nbytes == dtype.itemsize * prod(self._shape):
                # A numeric tensor: one writable array straight over the delivered bytes (no copy).
                array = np.ndarray(self._shape, dtype, raw)
            else:
                array = self._decode()
            self._array = array
        return array

    def _decode(self) -> npt.NDArray[Any]:
        raw = self._raw if self._raw is not None else memoryview(b"")
        if self._dtype == "BYTES":
            arr = deserialize_bytes_tensor(raw)
            return arr.reshape(self._shape)
        np_type = triton_to_numpy_type(NAME_TO_CODE[self._dtype])
        if np_type is None:
            raise TritonModelException(
                f"tensor '{self._name}' is {self._dtype}, which numpy cannot hold; install ml_dtypes for BF16"
            )
        return np.frombuffer(raw, dtype=np_type).reshape(self._shape)

    def _wire_bytes(self) -> memoryview:
        """The tensor's bytes in Triton's wire form, without a copy where possible."""
        if self._array is None:
            return self._raw if self._raw is not None else memoryview(b"")
        arr = self._array
        if self._dtype == "BYTES":
            return memoryview(serialize_bytes(arr))
        if arr.size:
            # The common case, a C-contiguous array, as bytes through the buffer protocol (no numpy calls).
            view = memoryview(arr)  # type: ignore[arg-type]
            if view.c_contiguous and view.nbytes == ITEM_SIZE[self._dtype] * arr.size:
                return view.cast("B")
        arr = np.ascontiguousarray(arr)
        if arr.nbytes != ITEM_SIZE[self._dtype] * arr.size:
            raise TritonModelException(f"tensor '{self._name}' has an unexpected byte size")
        flat: Any = arr.reshape(-1).view(np.uint8)
        return memoryview(flat)

    def to_dlpack(self) -> Any:
        return self.as_numpy().__dlpack__()

    def __dlpack__(self, stream: Any = None) -> Any:
        return self.as_numpy().__dlpack__()

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)  # kDLCPU, device 0

    @staticmethod
    def from_dlpack(name: str, dlpack_object: Any) -> Tensor:
        return Tensor(name, np.from_dlpack(dlpack_object))

    def __repr__(self) -> str:
        return f"Tensor({self._name!r}, {self._dtype}, shape={self._shape})"


# --- responses ---------------------------------------------------------------------------------------------


def _parameters_json(parameters: Any, what: str) -> str:
    if parameters is None:
        return "{}"
    if isinstance(parameters, str):
        return parameters
    if not isinstance(parameters, Mapping):
        raise TritonModelException(f"{what} parameters must be a dict")
    for k, v in parameters.items():
        if not isinstance(k, str):
            raise TritonModelException(f"Expect parameters keys to have type str, found type {type(k)}")
        if not isinstance(v, (bool, int, str)):
            raise TritonModelException(
                f"Expect parameters values to have type bool/int/str, found type {type(v)}"
            )
    return json.dumps(dict(parameters))


class InferenceResponse:
    def __init__(
        self,
        output_tensors: Sequence[Tensor] | None = None,
        error: TritonError | None = None,
        parameters: Mapping[str, bool | int | str] | str | None = None,
    ) -> None:
        tensors = list(output_tensors) if output_tensors is not None else []
        for t in tensors:
            if not isinstance(t, Tensor):
                raise TritonModelException(
                    f"output_tensors must hold pb_utils.Tensor objects, found {type(t)}"
                )
        if error is not None and not isinstance(error, TritonError):
            raise TritonModelException(f"error must be a pb_utils.TritonError, found {type(error)}")
        self._tensors = tensors
        self._error = error
        self._parameters = "{}" if parameters is None else _parameters_json(parameters, "response")

    def output_tensors(self) -> list[Tensor]:
        return self._tensors

    def has_error(self) -> bool:
        return self._error is not None

    def error(self) -> TritonError | None:
        return self._error

    def parameters(self) -> str:
        return self._parameters


class _RequestState:
    """What the runtime and the request's sender share about one request the host is waiting on. When the
    model drops every reference to a request that was never answered, the host is told (and fails it)
    instead of waiting forever."""

    __slots__ = (
        "__weakref__",
        "cancelled",
        "closed",
        "credit",
        "decoupled",
        "has_sender",
        "overdrawn",
        "pending",
        "requested",
        "returned",
        "rid",
        "sent",
    )

    def __init__(self, rid: int, decoupled: bool, requested: frozenset[str], credit: int = -1) -> None:
        self.rid = rid
        self.decoupled = decoupled
        self.requested = requested
        # Responses the request may still send before the host grants more (CREDIT); -1 = no limit.
        # Changed under the dispatcher's lock (runtime.py).
        self.credit = credit
        # Responses sent past the credit from the asyncio thread (runtime._take_credit_on_loop); grants
        # pay them back first.
        self.overdrawn = 0
        self.cancelled = False
        self.closed = False
        self.has_sender = False
        # execute() has returned this request to the host: too late to reschedule it.
        self.returned = False
        self.sent = 0
        # Non-decoupled models may send their one response and the FINAL flag in two calls.
        self.pending: InferenceResponse | None = None

    def __del__(self) -> None:
        if not self.closed:
            ch = _channel.current()
            if ch is not None:
                ch.orphaned(self.rid)


def _cancelled(state: _RequestState) -> bool:
    if not state.cancelled:
        ch = _channel.current()
        if ch is not None:
            ch.poll()  # cancellations arrive as frames nobody may be reading right now
    return state.cancelled


class InferenceResponseSender:
    """Sends the responses of one request (decoupled models, or one response for a default-mode model)."""

    def __init__(self, state: _RequestState) -> None:
        self._state = state
        self._lock = threading.Lock()

    def send(self, response: InferenceResponse | None = None, flags: int = 0) -> None:
        if flags not in (0, TRITONSERVER_RESPONSE_COMPLETE_FINAL):
            raise TritonModelException("Unable to send response. Unsupported flag provided.")
        if response is not None and not isinstance(response, InferenceResponse):
            raise TritonModelException(
                f"Unable to send response. Expected an InferenceResponse, found {type(response)}."
            )
        if flags == 0 and response is None:
            raise TritonModelException(
                "Inference Response object must be provided when the response flags is set to zero."
            )
        final = flags == TRITONSERVER_RESPONSE_COMPLETE_FINAL
        st = self._state
        with self._lock:
            if not st.decoupled:
                if response is not None and (st.sent > 0 or st.pending is not None):
                    raise TritonModelException(
                        "Unable to send response. Non-decoupled model cannot send more than one response."
                    )
                if response is None and final and st.sent == 0 and st.pending is None:
                    raise TritonModelException(
                        "Unable to send response. Non-decoupled model cannot send complete final before "
                        "sending a response."
                    )
            if st.closed:
                raise TritonModelException("Unable to send response. Response sender has been closed.")
            if not st.decoupled and not final:
                st.pending = response
                return
            if not st.decoupled and response is None:
                response, st.pending = st.pending, None
            if final:
                st.closed = True
            st.sent += 1
        ch = _channel.current()
        if ch is None:
            raise TritonModelException("Unable to send response: not running inside a Python backend stub.")
        ch.send_response(st.rid, response, final)

    def is_cancelled(self) -> bool:
        return _cancelled(self._state)


# --- requests ----------------------------------------------------------------------------------------------


class ResponseQueue:
    """Responses of one BLS call as (response, final) pairs. The runtime appends them as it reads them;
    `get` waits through `waiter`, which reads the control socket itself when no other thread does.

    Flow control (issue 33): the host sends at most `window` responses ahead of what `get` took, and
    `grant(n)` (a BLS_CREDIT frame) lets it send n more; they are granted a quarter of the window at a
    time, as they are taken. So a model that reads its iterator slowly, or holds it, holds back its own
    call (the target model waits in its send), and neither this process nor the host buffers without
    bound. window 0: no flow control."""

    def __init__(
        self,
        call_id: int,
        waiter: Callable[[Callable[[], bool]], None] | None = None,
        grant: Callable[[int], None] | None = None,
        window: int = 0,
    ) -> None:
        self.call_id = call_id
        self._items: collections.deque[tuple[InferenceResponse, bool]] = collections.deque()
        self._waiter = waiter
        self._grant = grant if window > 0 else None
        self._grant_at = max(1, window // 4)
        self._owed = 0
        self.finished = False

    def put(self, response: InferenceResponse, final: bool) -> None:
        self._items.append((response, final))

    def get(self) -> tuple[InferenceResponse, bool]:
        if self._waiter is not None:
            self._waiter(lambda: bool(self._items))
        item = self._items.popleft()
        if item[1]:
            self.finished = True
        elif self._grant is not None:
            self._owed += 1
            if self._owed >= self._grant_at:
                n, self._owed = self._owed, 0
                self._grant(n)
        return item


class ResponseIterator:
    """What `exec(decoupled=True)` returns: the target model's responses as they arrive. The last one
    carries the final flag and may have no outputs (a model's final-only flag). An iterator dropped
    before its final response cancels its call (the host would otherwise keep the call, and the target
    model waiting on it, until the iterator's flow-control window is read)."""

    def __init__(self, responses: ResponseQueue) -> None:
        self._responses = responses
        self._finished = False

    def __iter__(self) -> ResponseIterator:
        return self

    def __next__(self) -> InferenceResponse:
        if self._finished:
            raise StopIteration
        response, final = self._responses.get()
        if final:
            self._finished = True
        return response

    def cancel(self) -> None:
        if self._finished:
            return
        ch = _channel.current()
        if ch is not None:
            ch.bls_cancel(self._responses.call_id)

    def __del__(self) -> None:
        if self._finished or self._responses.finished or self._responses.call_id <= 0:
            return
        ch = _channel.current()
        if ch is not None:
            # From a finalizer: only queued (reentrant-safe); the runtime's janitor thread sends it.
            ch.bls_dropped(self._responses.call_id)


def _bls_error(message: str, code: int = TritonError.INTERNAL) -> InferenceResponse:
    return InferenceResponse(error=TritonError(message, code))


_NO_MODEL = object()


class InferenceRequest:
    """A request handed to `execute`, or one a model builds to call another model (BLS)."""

    def __init__(
        self,
        request_id: str = "",
        correlation_id: int | str = 0,
        inputs: Sequence[Tensor] | None = None,
        requested_output_names: Sequence[str] | None = None,
        model_name: Any = _NO_MODEL,
        model_version: int = -1,
        flags: int = 0,
        timeout: int = 0,
        preferred_memory: PreferredMemory | None = None,
        trace: InferenceTrace | None = None,
        parameters: Mapping[str, bool | int | str] | str | None = None,
    ) -> None:
        if inputs is None or requested_output_names is None or model_name is _NO_MODEL:
            raise TypeError(
                "InferenceRequest needs inputs, requested_output_names and model_name "
                "(e.g. InferenceRequest(model_name='m', inputs=[...], requested_output_names=['OUT']))"
            )
        if not isinstance(correlation_id, (int, str)) or isinstance(correlation_id, bool):
            raise TritonModelException("Correlation ID must be integer or string")
        for t in inputs:
            if not isinstance(t, Tensor):
                raise TritonModelException(f"inputs must hold pb_utils.Tensor objects, found {type(t)}")
        self._request_id = str(request_id)
        self._correlation_id: int | str = correlation_id
        self._inputs = list(inputs)
        self._requested = [str(n) for n in requested_output_names]
        self._model_name = str(model_name)
        self._model_version = int(model_version)
        self._flags = int(flags)
        self._timeout = int(timeout)
        self._trace: InferenceTrace | None = trace if trace is not None else InferenceTrace()
        self._parameters = _parameters_json(parameters, "request")
        self._release_flags = TRITONSERVER_REQUEST_RELEASE_ALL
        self._state: _RequestState | None = None
        self._sender: InferenceResponseSender | None = None
        self._preferred_memory = preferred_memory

    @classmethod
    def _incoming(
        cls,
        state: _RequestState,
        request_id: str,
        correlation_id: int | str,
        inputs: list[Tensor],
        requested: list[str],
        model_name: str,
        model_version: int,
        flags: int,
        parameters: str,
        trace: InferenceTrace | None = None,
    ) -> InferenceRequest:
        # The host's requests are well-formed: skip the checks a model's own BLS request gets.
        r = cls.__new__(cls)
        r._request_id = request_id
        r._correlation_id = correlation_id
        r._inputs = inputs
        r._requested = requested
        r._model_name = model_name
        r._model_version = model_version
        r._flags = flags
        r._timeout = 0
        r._trace = trace  # made when the model asks (trace()): most never do
        r._parameters = parameters
        r._release_flags = TRITONSERVER_REQUEST_RELEASE_ALL
        r._state = state
        r._sender = None
        r._preferred_memory = None
        return r

    def inputs(self) -> list[Tensor]:
        return self._inputs

    def request_id(self) -> str:
        return self._request_id

    def correlation_id(self) -> int | str:
        return self._correlation_id

    def requested_output_names(self) -> list[str]:
        return self._requested

    def flags(self) -> int:
        return self._flags

    def set_flags(self, flags: int) -> None:
        self._flags = int(flags)

    def timeout(self) -> int:
        return self._timeout

    def parameters(self) -> str:
        return self._parameters

    def trace(self) -> InferenceTrace:
        if self._trace is None:
            self._trace = InferenceTrace()
        return self._trace

    def model_name(self) -> str:
        return self._model_name

    def model_version(self) -> int:
        return self._model_version

    def get_response_sender(self) -> InferenceResponseSender:
        if self._state is None:
            raise TritonModelException(
                "only the requests passed to execute() have a response sender, not a BLS request"
            )
        if self._sender is None:
            self._sender = InferenceResponseSender(self._state)
            self._state.has_sender = True
        return self._sender

    def is_cancelled(self) -> bool:
        return self._state is not None and _cancelled(self._state)

    def set_release_flags(self, flags: int) -> None:
        """TRITONSERVER_REQUEST_RELEASE_RESCHEDULE hands the request back to the server for another
        execute() (iterative sequences); it must be set before execute returns."""
        if flags is None:
            raise TypeError("set_release_flags(): flags must not be None")
        if self._state is not None and self._state.returned:
            raise TritonModelException(
                "Unable to set the release flags: execute() has already returned this request to the "
                "server; set TRITONSERVER_REQUEST_RELEASE_RESCHEDULE before execute returns"
            )
        self._release_flags = int(flags)

    def _rescheduled(self) -> bool:
        return self._release_flags == TRITONSERVER_REQUEST_RELEASE_RESCHEDULE

    # BLS ------------------------------------------------------------------------------------------------

    def _start(self) -> ResponseQueue | InferenceResponse:
        ch = _channel.current()
        if ch is None:
            return _bls_error(
                "BLS requests need a running Nereid Python backend stub", TritonError.UNAVAILABLE
            )
        if not self._model_name:
            return _bls_error("BLS request needs a model_name", TritonError.INVALID_ARG)
        return ch.bls(self)

    def exec(self, decoupled: bool = False) -> Any:
        """Runs the request on the server: the response, or with decoupled=True an iterator over the
        responses. Errors come back as a response with has_error(), as in Triton."""
        started = self._start()
        if decoupled:
            if isinstance(started, InferenceResponse):
                q = ResponseQueue(-1)
                q.put(started, True)
                return ResponseIterator(q)
            return ResponseIterator(started)
        if isinstance(started, InferenceResponse):
            return started
        responses: list[InferenceResponse] = []
        while True:
            response, final = started.get()
            if response.has_error():
                # Drain to the final response so the call is finished, then report the error.
                while not final:
                    _, final = started.get()
                return response
            if final and not response.output_tensors() and responses:
                break
            responses.append(response)
            if final:
                break
        if len(responses) != 1:
            return _bls_error(
                f"model '{self._model_name}' sent {len(responses)} responses to a BLS request: "
                "use exec(decoupled=True) for decoupled models",
                TritonError.INVALID_ARG,
            )
        return responses[0]

    async def async_exec(self, decoupled: bool = False) -> Any:
        """`await request.async_exec()` inside `async def execute`: exec() without blocking the loop."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, self.exec, decoupled)


# --- logging -----------------------------------------------------------------------------------------------


class Logger:
    class LogLevel(enum.IntEnum):
        INFO = 0
        WARNING = 1
        ERROR = 2
        VERBOSE = 3

    INFO = LogLevel.INFO
    WARNING = LogLevel.WARNING
    ERROR = LogLevel.ERROR
    VERBOSE = LogLevel.VERBOSE

    @staticmethod
    def _emit(message: str, level: int, depth: int) -> None:
        frame = sys._getframe(depth)
        filename = os.path.basename(frame.f_code.co_filename)
        ch = _channel.current()
        if ch is None:
            print(f"{filename}:{frame.f_lineno}] {message}", file=sys.stderr)
            return
        ch.log(int(level), str(message), filename, frame.f_lineno)

    @staticmethod
    def log(message: str, level: int = LogLevel.INFO) -> None:
        Logger._emit(message, level, 2)

    @staticmethod
    def log_info(message: str) -> None:
        Logger._emit(message, Logger.LogLevel.INFO, 2)

    @staticmethod
    def log_warn(message: str) -> None:
        Logger._emit(message, Logger.LogLevel.WARNING, 2)

    @staticmethod
    def log_error(message: str) -> None:
        Logger._emit(message, Logger.LogLevel.ERROR, 2)

    @staticmethod
    def log_verbose(message: str) -> None:
        Logger._emit(message, Logger.LogLevel.VERBOSE, 2)


# --- model control from inside a model ---------------------------------------------------------------------


def _control(
    what: str, op: _messages.ModelControlOp, blobs: Sequence[bytes | memoryview] = ()
) -> dict[str, Any]:
    """Runs one repository operation on the server; its error becomes TritonModelException("<what>: ...")
    as Triton's stub words it."""
    ch = _channel.current()
    if ch is None:
        raise TritonModelException(
            f"{what}: the model loading API needs a running Nereid Python backend stub"
        )
    reply = ch.model_control(op, blobs)
    err = reply.get("error")
    if err is not None:
        raise TritonModelException(f"{what}: {err.get('message', '')}")
    return reply


def load_model(model_name: str, config: str = "", files: dict[str, bytes] | None = None) -> None:
    """Loads (or reloads) a model in explicit model control mode and returns once it is ready. `config`
    is a model configuration in JSON that replaces the model's own; `files` maps `file:<version>/<path>`
    names to their contents and then forms the whole model folder (needs `config`)."""
    if model_name is None:
        raise TypeError("load_model(): model_name must not be None")
    if config is None:
        raise TypeError("load_model(): config must not be None")
    name = str(model_name)
    descs: list[tuple[str, int, int]] = []
    blobs: list[bytes | memoryview] = []
    if files is not None:
        if not isinstance(files, dict):
            raise TritonModelException(
                f"failed to load model '{name}', files should be a dictionary of file paths and file contents"
            )
        offset = 0
        for key, value in files.items():
            if not isinstance(key, str) or not isinstance(value, (bytes, bytearray, memoryview)):
                raise TritonModelException(
                    f"failed to load model '{name}', files should be a dictionary of file paths and file "
                    "contents"
                )
            data = memoryview(value).cast("B")
            descs.append((key, offset, data.nbytes))
            blobs.append(data)
            offset += data.nbytes
    _control(
        "Failed to load model",
        _messages.load_op(name, str(config), descs),
        blobs,
    )


def unload_model(model_name: str, unload_dependents: bool = False) -> None:
    """Starts unloading a model in explicit model control mode. As in Triton it does not wait for the
    model to be unloaded: it returns once the model stopped being ready (so a model may unload itself)."""
    if model_name is None:
        raise TypeError("unload_model(): model_name must not be None")
    if unload_dependents is None:
        raise TypeError("unload_model(): unload_dependents must not be None")
    _control(
        "Failed to unload model",
        _messages.unload_op(str(model_name), bool(unload_dependents)),
    )


def is_model_ready(model_name: str, model_version: str = "") -> bool:
    """Whether the model (that version, or any version when "") is loaded and ready."""
    if model_name is None:
        raise TypeError("is_model_ready(): model_name must not be None")
    if model_version is None:
        raise TypeError("is_model_ready(): model_version must not be None")
    version = str(model_version)
    if version and not version.isdigit():
        raise TritonModelException(
            "Failed to check model readiness: failed to get model version from specified version string "
            f"'{version}', version should be an integral value > 0"
        )
    reply = _control("Failed to check model readiness", _messages.ready_op(str(model_name), version))
    return bool(reply.get("ready"))


_model_dir = ""


def set_model_dir(path: str) -> None:
    global _model_dir
    _model_dir = path


def get_model_dir() -> str:
    """The model's version folder (where model.py lives)."""
    return _model_dir
