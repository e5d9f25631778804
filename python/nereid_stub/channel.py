"""The seam between the model-facing objects (api.py) and the runtime that talks to the host (runtime.py):
api.py calls the current Channel; runtime.py installs one when the stub starts. Outside a stub (a model's
own unit tests importing triton_python_backend_utils) there is none, and calls that need the server say so.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from .api import InferenceRequest, InferenceResponse, ResponseQueue
    from .messages import ModelControlOp


class Channel(Protocol):
    def send_response(self, rid: int, response: InferenceResponse | None, final: bool) -> None: ...

    def orphaned(self, rid: int) -> None: ...

    def bls(self, request: InferenceRequest) -> ResponseQueue: ...

    def bls_cancel(self, call_id: int) -> None: ...

    def bls_dropped(self, call_id: int) -> None: ...

    def log(self, level: int, message: str, filename: str, line: int) -> None: ...

    def poll(self) -> None: ...

    def model_control(self, op: ModelControlOp, blobs: Sequence[bytes | memoryview]) -> dict[str, Any]: ...


_current: Channel | None = None


def install(channel: Channel) -> None:
    global _current
    _current = channel


def current() -> Channel | None:
    return _current
