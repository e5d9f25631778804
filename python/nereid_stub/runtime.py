"""The stub's runtime: owns the control socket and the /dev/shm files, runs the model's methods, and turns
what the model returns or sends into frames for the host.

Threads: the main thread runs every model call (auto_complete_config, initialize, execute, finalize) in
order and reads its own commands off the socket (dispatch.py: whoever waits for a frame reads, so there is
no reader thread to hand frames over); a janitor thread answers requests a model dropped without a final
response; `async def execute` coroutines run on one asyncio loop in a thread of its own. Writes from any
thread go through FrameWriter's lock.
"""

from __future__ import annotations

import asyncio
import collections
import importlib
import inspect
import json
import os
import queue
import socket
import sys
import threading
import time
import traceback
import weakref
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from typing import Any, TypeVar

from . import api, frames, messages, metrics
from . import channel as _channel
from .dispatch import Dispatcher
from .shm import InputArena, OutputArena

_INTERNAL = int(api.TritonError.INTERNAL)
_RESCHEDULE = api.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE
# BLS responses the host may send ahead of what a call's iterator took (BLS_REQUEST's window; bls.ts).
BLS_WINDOW = 32
_error_json = messages.error_json
_D = TypeVar("_D", str, bytes)


def _error_entry(rid: int, message: str, code: int) -> bytes:
    """An error response of EXECUTE_DONE."""
    return messages.json_entry(messages.error_json(rid, message, code))


def format_exception(e: BaseException) -> str:
    """`Type: message` plus the model's frames, the way Triton reports a Python error (pybind11's
    error_already_set::what(): every frame line ends with a newline, the last one included)."""
    text = f"{type(e).__name__}: {e}"
    frames_ = [
        f
        for f in traceback.extract_tb(e.__traceback__)
        if "nereid_stub" not in f.filename and not f.filename.startswith("<frozen")
    ]
    if frames_:
        text += "\n\nAt:\n" + "".join(f"  {f.filename}({f.lineno}): {f.name}\n" for f in reversed(frames_))
    return text


def _declared_outputs(config_json: str) -> frozenset[str] | None:
    """The output names of a model config (JSON); None when it cannot be read (nothing is reported)."""
    try:
        outputs = json.loads(config_json).get("output", [])
        return frozenset(str(o["name"]) for o in outputs)
    except (ValueError, TypeError, KeyError, AttributeError):
        return None


def exception_info(e: BaseException) -> messages.ErrorInfo:
    """What the host needs to name the user's frame and log the whole traceback (messages.ErrorInfo)."""
    frames_ = [
        (f.filename, f.lineno or 0, f.name)
        for f in reversed(traceback.extract_tb(e.__traceback__))
        if "nereid_stub" not in f.filename and not f.filename.startswith("<frozen")
    ]
    return {
        "type": type(e).__name__,
        "message": str(e),
        "frames": frames_,
        "traceback": "".join(traceback.format_exception(type(e), e, e.__traceback__)),
    }


class Runtime:
    def __init__(self, sock: socket.socket, in_fd: int | None, out_fd: int | None) -> None:
        self._writer = frames.FrameWriter(sock)
        self._dispatch = Dispatcher(frames.FrameReader(sock), self._route)
        self._in_fd = in_fd
        self._out_fd = out_fd
        self._inputs: InputArena | None = InputArena(in_fd) if in_fd is not None else None
        self._outputs: OutputArena | None = None
        self._threshold = 1 << 62
        self._commands: collections.deque[frames.Frame] = collections.deque()
        # The highest request id a batch has been started with, and cancellations that arrived for later
        # ones (batches the host pipelined behind the running one): both under the dispatcher's lock.
        self._last_rid = 0
        self._early_cancels: set[int] = set()
        # Work for the janitor thread, queued from finalizers: (False, rid) a request released without a
        # final response, (True, call) a BLS iterator dropped before its final response.
        self._orphans: queue.SimpleQueue[tuple[bool, int]] = queue.SimpleQueue()
        # rid -> the request's state, weakly (a state the model dropped must die: that is how an unanswered
        # request is noticed); dead entries are swept as the map grows (_sweep).
        self._requests: dict[int, weakref.ref[api._RequestState]] = {}
        self._sweep_at = 64
        self._bls: dict[int, api.ResponseQueue] = {}
        self._bls_lock = threading.Lock()
        self._next_bls = 1
        self._controls: dict[int, dict[str, Any] | None] = {}
        self._next_control = 1
        # Which model method runs now: the model loading API is refused in auto_complete_config and finalize.
        self._phase = "starting"
        self._name = "python"
        self._model_name = ""
        self._model_version = 0
        self._decoupled = False
        # Each request's initial credit (INIT's response_window; 0 = no limit): see send_response.
        self._window = 0
        # ... and how far past it a send on the asyncio thread may go (INIT's response_overdraft).
        self._overdraft = 0
        self._loop_thread: int | None = None
        # Output names the config declares: a response naming another is reported to the host (which warns
        # or fails the request, src/backends/output-check.ts) before the pruning below drops it.
        self._declared: frozenset[str] | None = None
        self._model: Any = None
        self._model_class: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._background: set[Future[Any]] = set()
        self._shm_warned = False

    # --- plumbing ----------------------------------------------------------------------------------------

    def send(self, type_: int, header: Mapping[str, Any], blobs: Sequence[bytes | memoryview] = ()) -> None:
        self._writer.send(type_, header, blobs)

    def run(self) -> None:
        _channel.install(self)
        threading.Thread(target=self._janitor_loop, name="nereid-janitor", daemon=True).start()
        import numpy

        self.send(messages.HELLO, messages.hello(os.getpid(), sys.version.split()[0], numpy.__version__))
        while True:
            self._dispatch.wait_for(lambda: bool(self._commands))
            frame = self._commands.popleft()
            if frame.type == messages.INIT:
                if not self._initialize(frame.header):  # type: ignore[arg-type]
                    return
            elif frame.type == messages.AUTOCOMPLETE:
                self._auto_complete(frame.header)  # type: ignore[arg-type]
                return
            elif frame.type == messages.EXECUTE:
                self._execute(frame)
            elif frame.type == messages.FINALIZE:
                self._finalize()
                return

    def _route(self, frame: frames.Frame) -> None:
        """Called by the dispatcher (under its lock) for every frame read."""
        t = frame.type
        h = frame.header
        if t == messages.CANCEL:
            rid = int(h["rid"])
            state = self._request_state(rid)
            if state is not None:
                state.cancelled = True
            elif rid > self._last_rid:
                # A pipelined batch not started yet (its EXECUTE waits in the queue or the socket).
                self._early_cancels.add(rid)
        elif t == messages.CREDIT:
            state = self._request_state(int(h["rid"]))
            if state is not None and state.credit >= 0:
                n = int(h["n"])
                paid = min(n, state.overdrawn)
                state.overdrawn -= paid
                state.credit += n - paid
        elif t == messages.BLS_RESPONSE:
            call_id = int(h["call"])
            with self._bls_lock:
                call = self._bls.get(call_id)
                if call is not None and h.get("final"):
                    del self._bls[call_id]
            if call is not None:
                call.put(self._bls_response(h, frame.blob), bool(h.get("final")))  # type: ignore[arg-type]
        elif t == messages.METRICS_QUERY:
            self.send(messages.METRICS, messages.metrics_reply(int(h.get("query", 0)), metrics.snapshot()))
        elif t == messages.MODEL_CONTROL_DONE:
            q = int(h["call"])
            if q in self._controls:
                self._controls[q] = h
        elif t in (messages.INIT, messages.AUTOCOMPLETE, messages.EXECUTE, messages.FINALIZE):
            self._commands.append(frame)
        elif t == messages.FREE and self._outputs is not None:
            for offset, size in h["ranges"]:
                self._outputs.release(int(offset), int(size))

    def _janitor_loop(self) -> None:
        while True:
            is_bls, rid = self._orphans.get()
            if is_bls:
                self.bls_cancel(rid)
                continue
            self._send_error(
                rid,
                "the Python model released the request without sending a final response "
                "(send one with TRITONSERVER_RESPONSE_COMPLETE_FINAL)",
                _INTERNAL,
            )

    # --- Channel -----------------------------------------------------------------------------------------

    def orphaned(self, rid: int) -> None:
        self._orphans.put((False, rid))

    def bls_dropped(self, call_id: int) -> None:
        self._orphans.put((True, call_id))

    def poll(self) -> None:
        self._dispatch.poll()

    def log(self, level: int, message: str, filename: str, line: int) -> None:
        self.send(messages.LOG, messages.log(level, message, filename, line))

    def send_response(self, rid: int, response: api.InferenceResponse | None, final: bool) -> None:
        state = self._request_state(rid)
        if state is not None and state.credit >= 0:
            self._take_credit(state)
        requested = state.requested if state is not None else None
        blobs: list[memoryview] = []
        self._writer.send_text(
            messages.RESPONSE, self._response_json(rid, final, response, requested, blobs), blobs
        )

    def _take_credit(self, state: api._RequestState) -> None:
        """Spends one of the request's credit, waiting (this thread only) until the host grants more: the
        host grants it back as the request's client takes its responses (src/backends/python/credit.ts),
        so a client that reads slowly holds back its own request's sends, not the socket every request
        shares. A cancelled request does not wait (the host drops what it sends). Frames are read while
        waiting, by this thread when nobody else reads (dispatch.py)."""

        def take() -> bool:  # checked under the dispatcher's lock, as CREDIT frames are routed
            if state.credit > 0:
                state.credit -= 1
                return True
            return state.cancelled

        if self._loop_thread is not None and threading.get_ident() == self._loop_thread:
            self._take_credit_on_loop(state, take)
            return
        self._dispatch.wait_for(take)

    def _take_credit_on_loop(self, state: api._RequestState, take: Callable[[], bool]) -> None:
        """send() from an `async def execute` on the asyncio thread: waiting for credit there would stall
        every coroutine of this stub (every other request) behind one slow client. So it does not wait: the
        response goes past the credit, up to the overdraft the host parks for it, and a send beyond that
        fails with an error saying how to wait without blocking the loop."""
        self._dispatch.poll()  # credit that already arrived
        with self._dispatch.lock:
            if take():
                return
            if state.overdrawn < self._overdraft:
                state.overdrawn += 1
                return
        raise api.TritonModelException(
            f"the client of this request has not taken its last {self._window + self._overdraft} responses, "
            "and a send on the asyncio event loop cannot wait for it without stalling every other request "
            "of this model instance; send from a thread instead, e.g. "
            "`await loop.run_in_executor(None, response_sender.send, response)`, which waits for the client"
        )

    def _request_state(self, rid: int) -> api._RequestState | None:
        ref = self._requests.get(rid)
        return ref() if ref is not None else None

    def _sweep(self) -> None:
        """Drops the entries of requests that are gone; runs as the map doubles, so O(1) per request."""
        live = self._requests
        for rid, ref in list(live.items()):
            if ref() is None:
                del live[rid]
        self._sweep_at = max(64, 2 * len(live))

    def bls(self, request: api.InferenceRequest) -> api.ResponseQueue:
        with self._bls_lock:
            call_id = self._next_bls
            self._next_bls += 1
            call = api.ResponseQueue(
                call_id,
                self._dispatch.wait_for,
                lambda n: self.send(messages.BLS_CREDIT, messages.bls_credit(call_id, n)),
                BLS_WINDOW,
            )
            self._bls[call_id] = call
        blobs: list[memoryview] = []
        try:
            text = messages.bls_request_json(
                call_id,
                request.model_name(),
                request.model_version(),
                request.request_id(),
                request.correlation_id(),
                request.flags(),
                request.timeout(),
                request.parameters(),
                request.requested_output_names(),
                self._describe_tensors(request.inputs(), None, blobs, messages.tensor_json),
                request.trace()._rid,
                BLS_WINDOW,
            )
            self._writer.send_text(messages.BLS_REQUEST, text, blobs)
        except BaseException:
            with self._bls_lock:
                self._bls.pop(call_id, None)
            raise
        return call

    def bls_cancel(self, call_id: int) -> None:
        self.send(messages.BLS_CANCEL, messages.bls_cancel(call_id))

    def model_control(
        self, op: messages.ModelControlOp, blobs: Sequence[bytes | memoryview]
    ) -> dict[str, Any]:
        if self._phase in ("auto_complete_config", "finalize"):
            raise api.TritonModelException(
                f"the model loading API is not supported in {self._phase}; use it in initialize or execute"
            )
        with self._dispatch.lock:
            q = self._next_control
            self._next_control += 1
            self._controls[q] = None
        try:
            self.send(messages.MODEL_CONTROL, messages.model_control(q, op), blobs)
            self._dispatch.wait_for(lambda: self._controls.get(q) is not None)
            with self._dispatch.lock:
                reply = self._controls.pop(q)
        finally:
            with self._dispatch.lock:
                self._controls.pop(q, None)
        assert reply is not None
        return reply

    # --- tensors -----------------------------------------------------------------------------------------

    def _tensor_bytes(self, desc: messages.StubTensor, blob: memoryview) -> memoryview:
        offset, size = int(desc["offset"]), int(desc["byte_size"])
        if desc["in_shm"]:
            if self._inputs is None:
                raise ValueError("the host sent a shared-memory tensor but this stub has no shared memory")
            return self._inputs.view(offset, size)
        if offset < 0 or size < 0 or offset + size > len(blob):
            raise ValueError("inline tensor lies outside its frame")
        return blob[offset : offset + size]

    def _read_tensors(self, descs: list[messages.StubTensor], blob: memoryview) -> list[api.Tensor]:
        # The host is trusted (it checked the request); json.loads already made the types right.
        return [
            api.Tensor._wire(d["name"], d["datatype"], d["shape"], self._tensor_bytes(d, blob)) for d in descs
        ]

    def _describe_tensors(
        self,
        tensors: Sequence[api.Tensor],
        requested: frozenset[str] | None,
        blobs: list[memoryview],
        tensor_json: Callable[[str, str, list[int], bool, int, int], _D],
        undeclared: list[str] | None = None,
        inline: int = -1,
    ) -> list[_D]:
        """Tensor descriptors as JSON texts (or what `tensor_json` makes: messages.tensor_bin for
        EXECUTE_DONE); inline bytes are appended to `blobs` (`inline`: their size so far, when the caller
        keeps count); pruned outputs the config does not declare are added to `undeclared`."""
        descs: list[_D] = []
        if inline < 0:
            inline = sum(map(len, blobs))
        for t in tensors:
            name = t._name
            if requested is not None and name not in requested:
                # Triton prunes outputs nobody asked for before they cross the process boundary
                if undeclared is not None and self._declared is not None and name not in self._declared:
                    undeclared.append(name)
                continue
            data = t._wire_bytes()
            size = len(data)
            if size >= self._threshold and self._outputs is not None:
                offset = self._outputs.write(data)
                if offset is not None:
                    descs.append(tensor_json(name, t._dtype, t._shape, True, offset, size))
                    continue
                self._warn_shm_off()
            blobs.append(data)
            descs.append(tensor_json(name, t._dtype, t._shape, False, inline, size))
            inline += size
        return descs

    def _warn_shm_off(self) -> None:
        if self._shm_warned or self._outputs is None:
            return
        self._shm_warned = True
        reason = self._outputs.disabled_reason or "unknown error"
        self.log(
            int(api.Logger.LogLevel.WARNING),
            f"/dev/shm cannot take more output tensors ({reason}); this instance now sends them "
            "over its control socket, which is slower. Give the server a larger /dev/shm "
            "(e.g. docker run --shm-size=1g) to get the fast path back.",
            "nereid_stub",
            0,
        )

    def _response_json(
        self,
        rid: int,
        final: bool,
        response: api.InferenceResponse | None,
        requested: frozenset[str] | None,
        blobs: list[memoryview],
        inline: int = -1,
    ) -> str:
        """`inline`: the size of `blobs` so far, when the caller keeps count (-1: summed here)."""
        if response is None:
            return messages.response_json(rid, final, None)
        err = response._error
        if err is not None:
            # The model answered with this error: Triton counts the request as a success.
            return messages.error_json(rid, err.message(), int(err.code()), from_model=True, final=final)
        undeclared: list[str] = []
        tensors = self._describe_tensors(
            response._tensors, requested, blobs, messages.tensor_json, undeclared, inline
        )
        return messages.response_json(rid, final, tensors, response._parameters, undeclared)

    def _response_entry(
        self,
        rid: int,
        response: api.InferenceResponse,
        requested: frozenset[str] | None,
        blobs: list[memoryview],
        inline: int,
    ) -> bytes:
        """A final response of EXECUTE_DONE (messages.response_entry); `inline`: the size of `blobs`."""
        err = response._error
        if err is not None:
            # The model answered with this error: Triton counts the request as a success.
            return messages.json_entry(
                messages.error_json(rid, err.message(), int(err.code()), from_model=True, final=True)
            )
        undeclared: list[str] = []
        tensors = self._describe_tensors(
            response._tensors, requested, blobs, messages.tensor_bin, undeclared, inline
        )
        return messages.response_entry(rid, True, tensors, response._parameters, undeclared)

    def _bls_response(self, h: messages.BlsResponse, blob: memoryview) -> api.InferenceResponse:
        err = h.get("error")
        if err is not None:
            return api.InferenceResponse(error=api.TritonError(str(err["message"]), int(err["code"])))
        try:
            tensors = self._read_tensors(h.get("outputs", []), blob)
        except (ValueError, KeyError, TypeError) as e:
            return api.InferenceResponse(error=api.TritonError(str(e)))
        return api.InferenceResponse(output_tensors=tensors, parameters=str(h.get("parameters", "{}")))

    def _send_error(self, rid: int, message: str, code: int) -> None:
        self._writer.send_text(messages.RESPONSE, _error_json(rid, message, code))

    # --- commands ----------------------------------------------------------------------------------------

    def _load_class(self, h: messages.Init | messages.AutoComplete) -> Any:
        package = h.get("backend_package")
        if package is not None:
            args = h.get("args")
            if isinstance(args, dict):
                # The model's version folder, as for a model.py of its own.
                api.set_model_dir(
                    os.path.join(str(args.get("model_repository", "")), str(args.get("model_version", "")))
                )
            return _load_backend_class(package, str(h["model_path"]))
        model_path = str(h["model_path"])
        version_dir = os.path.dirname(model_path)
        model_dir = os.path.dirname(version_dir)
        filename = os.path.basename(model_path)
        if not filename.endswith(".py"):
            raise api.TritonModelException(f"Model name must end with '.py'. Model name is \"{filename}\".")
        if not os.path.isfile(model_path):
            raise api.TritonModelException(f"Python model file not found in '{model_path}'")
        api.set_model_dir(version_dir)
        # As Triton does: the version folder is a package inside the model folder, so a model.py can import
        # its neighbours relatively (`from .helpers import x`) or absolutely.
        sys.path.append(version_dir)
        sys.path.append(model_dir)
        module = importlib.import_module(f"{os.path.basename(version_dir)}.{filename[:-3]}")
        cls = getattr(module, "TritonPythonModel", None)
        if cls is None:
            raise api.TritonModelException(
                f"Python model '{model_path}' does not define class TritonPythonModel"
            )
        return cls

    def _initialize(self, h: messages.Init) -> bool:
        self._phase = "initialize"
        self._name = str(h.get("name", self._name))
        self._model_name = str(h["args"].get("model_name", ""))
        self._model_version = int(h["args"].get("model_version", "0") or 0)
        self._declared = _declared_outputs(str(h["args"].get("model_config", "")))
        self._decoupled = bool(h.get("decoupled"))
        self._window = max(0, int(h.get("response_window", 0)))
        self._overdraft = max(0, int(h.get("response_overdraft", 0)))
        self._threshold = int(h.get("shm_threshold", self._threshold))
        if self._out_fd is not None:
            self._outputs = OutputArena(
                self._out_fd,
                int(h.get("shm_initial", 1 << 20)),
                int(h.get("shm_growth", 1 << 20)),
                reclaim=self._dispatch.poll,
            )
        stage = "import"  # what failed, for the host's log: importing model.py, or the model's own code
        try:
            self._model_class = self._load_class(h)
            stage = "initialize"
            self._model = self._model_class()
            init = getattr(self._model, "initialize", None)
            if init is not None:
                args = {str(k): str(v) for k, v in h["args"].items()}
                result = init(args)
                if inspect.iscoroutine(result):
                    self._run_coroutine(result).result()
        except BaseException as e:
            info = exception_info(e)
            info["phase"] = stage
            self.send(messages.INIT_DONE, messages.init_failed(format_exception(e), info))
            return False
        self._phase = "execute"
        self.send(messages.INIT_DONE, messages.init_done())
        return True

    def _auto_complete(self, h: messages.AutoComplete) -> None:
        import triton_python_backend_utils as pb_utils

        self._phase = "auto_complete_config"
        try:
            cls = self._load_class(h)
            config = pb_utils.ModelConfig(str(h["config"]))
            fn = getattr(cls, "auto_complete_config", None)
            if fn is not None:
                config = fn(config)
            if not isinstance(config, pb_utils.ModelConfig):
                raise api.TritonModelException(
                    f"auto_complete_config function in model '{h.get('name', '')}' must return a valid "
                    "pb.ModelConfig object."
                )
            self.send(messages.AUTOCOMPLETE_DONE, messages.autocomplete_done(json.dumps(config.as_dict())))
        except BaseException as e:
            self.send(messages.AUTOCOMPLETE_DONE, messages.autocomplete_failed(format_exception(e)))

    def _finalize(self) -> None:
        self._phase = "finalize"
        try:
            fn = getattr(self._model, "finalize", None)
            if fn is not None:
                result = fn()
                if inspect.iscoroutine(result):
                    self._run_coroutine(result).result()
        except BaseException as e:
            whole = exception_info(e)["traceback"]
            self.log(int(api.Logger.LogLevel.ERROR), f"finalize() failed: {whole}", "", 0)
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
        self.send(messages.FINALIZE_DONE, messages.finalize_done())

    def _event_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="nereid-asyncio", daemon=True)
            thread.start()
            self._loop_thread = thread.ident
            self._loop = loop
        return self._loop

    def _run_coroutine(self, coro: Any) -> Future[Any]:
        return asyncio.run_coroutine_threadsafe(coro, self._event_loop())

    def _build_requests(
        self, frame: frames.Frame
    ) -> tuple[list[api.InferenceRequest], list[api._RequestState]]:
        requests: list[api.InferenceRequest] = []
        states: list[api._RequestState] = []
        execute: messages.Execute = frame.header  # type: ignore[assignment]
        blob = frame.blob
        wire = api.Tensor._wire
        live = self._requests
        with self._dispatch.lock:
            for r in execute["requests"]:
                state = api._RequestState(
                    r["rid"], self._decoupled, frozenset(r["requested_outputs"]), self._window or -1
                )
                live[state.rid] = weakref.ref(state)
                states.append(state)
                self._last_rid = max(self._last_rid, state.rid)
            if self._early_cancels:
                for state in states:
                    if state.rid in self._early_cancels:
                        state.cancelled = True
                self._early_cancels = {rid for rid in self._early_cancels if rid > self._last_rid}
        for r, state in zip(execute["requests"], states, strict=True):
            outputs = r["requested_outputs"]
            corr = r["correlation_id"]
            trace: api.InferenceTrace | None = None
            if r.get("traced"):
                trace = api.InferenceTrace(r.get("trace_context"))
                trace._rid = state.rid
            # The host is trusted (it checked the request); json.loads already made the types right.
            inputs: list[api.Tensor] = []
            for d in r["inputs"]:
                offset, size = d["offset"], d["byte_size"]
                if d["in_shm"] or offset < 0 or size < 0 or offset + size > len(blob):
                    raw = self._tensor_bytes(d, blob)  # shared memory, or the error
                else:
                    raw = blob[offset : offset + size]
                inputs.append(wire(d["name"], d["datatype"], d["shape"], raw))
            requests.append(
                api.InferenceRequest._incoming(
                    state,
                    request_id=r["request_id"],
                    correlation_id=corr if r["correlation_is_string"] else int(corr),
                    inputs=inputs,
                    requested=outputs,
                    model_name=self._model_name,
                    model_version=self._model_version,
                    flags=r["flags"],
                    parameters=r["parameters"],
                    trace=trace,
                )
            )
            if r.get("cancelled"):
                state.cancelled = True
        if len(live) > self._sweep_at:
            self._sweep()
        return requests, states

    def _execute(self, frame: frames.Frame) -> None:
        # Stamped on CLOCK_MONOTONIC, the host's process.hrtime clock: the host splits the batch's time into
        # waiting (behind earlier pipelined batches), the stub's own work and reading the answers.
        started = time.monotonic_ns()
        batch = int(frame.header["batch"])
        states: list[api._RequestState] = []
        blobs: list[memoryview] = []
        try:
            requests, states = self._build_requests(frame)
            result = self._model.execute(requests)
            if inspect.iscoroutine(result):
                if self._decoupled:
                    # The coroutine runs on after this EXECUTE_DONE: it is too late to reschedule from it.
                    for s in states:
                        s.returned = True
                    self._watch_background(self._run_coroutine(result), states)
                    result = None
                else:
                    result = self._run_coroutine(result).result()
            entries, handed_back = self._returned(requests, states, result, blobs)
        except BaseException as e:
            for s in states:
                s.closed = True
                s.returned = True
            failed = messages.execute_failed(
                batch, self._failure(e), exception_info(e), started, time.monotonic_ns()
            )
            self._writer.send_bytes(messages.EXECUTE_DONE, failed)
            return
        for s in states:
            s.returned = True
        done = messages.execute_done(batch, entries, handed_back, started, time.monotonic_ns())
        self._writer.send_bytes(messages.EXECUTE_DONE, done, blobs)

    def _failure(self, e: BaseException) -> str:
        return f"Failed to process the request(s) for model '{self._name}', message: {format_exception(e)}"

    def _returned(
        self,
        requests: list[api.InferenceRequest],
        states: list[api._RequestState],
        result: Any,
        blobs: list[memoryview],
    ) -> tuple[list[bytes], list[int]]:
        """What execute returned -> the response entries of EXECUTE_DONE (default mode answers in it) and
        the requests the model rescheduled (TRITONSERVER_REQUEST_RELEASE_RESCHEDULE)."""
        if result is None:
            return self._returned_none(requests, states)
        self._check_returned(requests, result)
        handed_back: list[int] = []
        out: list[bytes] = []
        inline = sum(map(len, blobs))  # the blobs' size, kept up to date as responses add theirs
        for request, state, response in zip(requests, states, result, strict=True):
            if state.closed:
                if response is not None:
                    raise api.TritonModelException(
                        "Unable to send response. Response sender has been closed."
                    )
                continue
            state.closed = True
            if response is not None:
                before = len(blobs)
                out.append(self._response_entry(state.rid, response, state.requested, blobs, inline))
                for b in blobs[before:]:
                    inline += len(b)
            elif request._rescheduled():
                handed_back.append(state.rid)
            else:
                out.append(
                    _error_entry(
                        state.rid,
                        "execute() returned None for this request: return an InferenceResponse for every "
                        "request, or reschedule it first with request.set_release_flags("
                        "pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE)",
                        _INTERNAL,
                    )
                )
        return out, handed_back

    def _returned_none(
        self, requests: list[api.InferenceRequest], states: list[api._RequestState]
    ) -> tuple[list[bytes], list[int]]:
        """_returned for an execute that returned None (every decoupled model; a default-mode model only
        when it answered or rescheduled each request itself)."""
        errors: list[bytes] = []
        handed_back: list[int] = []
        for request, s in zip(requests, states, strict=True):
            if s.closed:
                continue  # ended already (a final response), so there is nothing to reschedule
            if request._rescheduled():
                s.closed = True
                handed_back.append(s.rid)
            # A request whose sender the model took may still be answered (from another thread).
            elif not self._decoupled and not s.has_sender:
                s.closed = True
                errors.append(
                    _error_entry(
                        s.rid,
                        "Expected a list in the execute return, found type '<class 'NoneType'>'.",
                        _INTERNAL,
                    )
                )
        return errors, handed_back

    def _check_returned(self, requests: list[api.InferenceRequest], result: Any) -> None:
        """Raises Triton's error for a return value that is not one response (or None) per request."""
        if self._decoupled:
            raise api.TritonModelException(
                f"Python model '{self._name}' is using the decoupled mode and the execute function must "
                "return None."
            )
        if not isinstance(result, list):
            raise api.TritonModelException(
                f"Expected a list in the execute return, found type '{type(result)}'."
            )
        if len(result) != len(requests):
            raise api.TritonModelException(
                "Number of InferenceResponse objects do not match the number of InferenceRequest objects. "
                f"InferenceRequest(s) size is:{len(requests)}, and InferenceResponse(s) size is:{len(result)}"
            )
        for request, response in zip(requests, result, strict=True):
            if response is None:
                continue
            if request._release_flags == _RESCHEDULE:
                raise api.TritonModelException(
                    "Expected a None object in the execute function return list for reschduled request, "
                    f"found type '{type(response)}'."
                )
            if not isinstance(response, api.InferenceResponse):
                raise api.TritonModelException(
                    "Expected an 'InferenceResponse' object in the execute function return list, found type "
                    f"'{type(response)}'."
                )

    def _watch_background(self, future: Future[Any], states: list[api._RequestState]) -> None:
        """A decoupled `async def execute` runs on after execute returns; if it raises, every request of
        its batch still waiting for its final response fails with that error."""
        self._background.add(future)
        keep = list(states)

        def done(f: Future[Any]) -> None:
            self._background.discard(f)
            exc = f.exception()
            if exc is not None:
                message = self._failure(exc)
                info = exception_info(exc)
                for s in keep:
                    if not s.closed:
                        s.closed = True
                        self._writer.send_text(
                            messages.RESPONSE, _error_json(s.rid, message, _INTERNAL, info=info)
                        )
            keep.clear()

        future.add_done_callback(done)


def _load_backend_class(package: messages.BackendPackage, script: str) -> Any:
    """A Python-based backend's TritonPythonModel: its folder becomes the package `package["name"]` (a name
    of its own, so a backend called `tensorflow` does not shadow the real `tensorflow` it imports), and its
    script a module of that package, so the backend's other files import relatively (`from . import x`)."""
    import importlib.machinery
    import importlib.util

    name = str(package["name"])
    folder = str(package["dir"])
    if not os.path.isfile(script):
        raise api.TritonModelException(f"Python-based backend file not found: '{script}'")
    if name not in sys.modules:
        init = os.path.join(folder, "__init__.py")
        spec: importlib.machinery.ModuleSpec | None
        if os.path.isfile(init):
            spec = importlib.util.spec_from_file_location(name, init, submodule_search_locations=[folder])
        else:
            spec = importlib.machinery.ModuleSpec(name, None, is_package=True)
            spec.submodule_search_locations = [folder]
        if spec is None:
            raise api.TritonModelException(f"cannot import Python-based backend folder '{folder}'")
        pkg = importlib.util.module_from_spec(spec)
        sys.modules[name] = pkg
        if spec.loader is not None:
            spec.loader.exec_module(pkg)
    stem = os.path.splitext(os.path.basename(script))[0]
    module = importlib.import_module(f"{name}.{stem}")
    cls = getattr(module, "TritonPythonModel", None)
    if cls is None:
        raise api.TritonModelException(
            f"Python-based backend '{script}' does not define class TritonPythonModel"
        )
    return cls
