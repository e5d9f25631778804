"""repeat_int32_python: a decoupled model. Each request gets one response per element of IN, sent from a
worker thread after DELAY[i] milliseconds, then the final flag; execute itself returns after WAIT ms.

The waits come from clients, so they are bounded: a WAIT over MAX_WAIT_MS or a DELAY over MAX_DELAY_MS is
refused with INVALID_ARG (one request must not hold the instance, or a thread, for hours), and the response
thread stops at once when the request is cancelled."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import numpy as np

import triton_python_backend_utils as pb_utils

# execute() sleeps WAIT ms with the instance held: at most 10 s.
MAX_WAIT_MS = 10_000
# Each response waits DELAY[i] ms on a thread of its own (the instance is free meanwhile): at most 60 s.
MAX_DELAY_MS = 60_000


class TritonPythonModel:
    def initialize(self, args: dict[str, str]) -> None:
        config = json.loads(args["model_config"])
        if not pb_utils.using_decoupled_model_transaction_policy(config):
            raise pb_utils.TritonModelException(
                f"model '{args['model_name']}' sends any number of responses per request: "
                "set model_transaction_policy { decoupled: true } in its config"
            )
        # Response threads still running, so finalize can wait for them.
        self.threads: set[threading.Thread] = set()
        self.lock = threading.Lock()

    def execute(self, requests: list[pb_utils.InferenceRequest]) -> None:
        for request in requests:
            sender = request.get_response_sender()
            values = pb_utils.get_input_tensor_by_name(request, "IN")
            delays = pb_utils.get_input_tensor_by_name(request, "DELAY")
            wait = pb_utils.get_input_tensor_by_name(request, "WAIT")
            if values is None or delays is None or wait is None:
                self.fail(sender, "IN, DELAY and WAIT are required")
                continue
            # Copies: the thread outlives this call, and input tensors are only valid while it runs.
            v: np.ndarray[Any, Any] = values.as_numpy().copy()
            d: np.ndarray[Any, Any] = delays.as_numpy().copy()
            if d.size != v.size:
                self.fail(sender, "DELAY must have as many elements as IN")
                continue
            wait_ms = int(wait.as_numpy()[0])
            if wait_ms > MAX_WAIT_MS or (d.size > 0 and int(d.max()) > MAX_DELAY_MS):
                self.fail(
                    sender, f"WAIT must be at most {MAX_WAIT_MS} ms and each DELAY at most {MAX_DELAY_MS} ms"
                )
                continue
            thread = threading.Thread(target=self.respond, args=(sender, v, d), daemon=True)
            with self.lock:
                self.threads.add(thread)
            thread.start()
            time.sleep(wait_ms / 1000)
        return None

    @staticmethod
    def fail(sender: pb_utils.InferenceResponseSender, message: str) -> None:
        error = pb_utils.TritonError(message, pb_utils.TritonError.INVALID_ARG)
        sender.send(pb_utils.InferenceResponse(error=error), pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)

    def respond(self, sender: pb_utils.InferenceResponseSender, values: Any, delays: Any) -> None:
        for idx in range(values.size):
            # Sleep in small steps so a cancelled request stops its thread soon.
            deadline = time.monotonic() + int(delays[idx]) / 1000
            while not sender.is_cancelled() and time.monotonic() < deadline:
                time.sleep(min(0.05, max(0.0, deadline - time.monotonic())))
            if sender.is_cancelled():
                break
            out = pb_utils.Tensor("OUT", np.array([values[idx]], dtype=np.int32))
            index = pb_utils.Tensor("IDX", np.array([idx], dtype=np.uint32))
            sender.send(pb_utils.InferenceResponse([out, index]))
        sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        with self.lock:
            self.threads.discard(threading.current_thread())

    def finalize(self) -> None:
        with self.lock:
            threads = list(self.threads)
        for thread in threads:
            thread.join(timeout=5)
