"""One open ModelStreamInfer stream on tritonclient.grpc's shared client, its callbacks in a queue."""

from __future__ import annotations

import queue
from typing import Any

from tritonclient.utils import InferenceServerException

TIMEOUT = 30.0


class Stream:
    """One open stream on the shared client, with its callbacks collected in a queue."""

    def __init__(self, grpc: Any, headers: dict[str, str] | None = None) -> None:
        self.grpc = grpc
        self.answers: queue.Queue[tuple[Any, InferenceServerException | None]] = queue.Queue()
        grpc.start_stream(callback=self._callback, headers=headers)

    def _callback(self, result: Any, error: InferenceServerException | None) -> None:
        self.answers.put((result, error))

    def next(self) -> tuple[Any, InferenceServerException | None]:
        return self.answers.get(timeout=TIMEOUT)

    def results(self, count: int) -> list[Any]:
        out = []
        for _ in range(count):
            result, error = self.next()
            assert error is None, error
            out.append(result)
        return out
