"""The exception every part of the stub raises for model misuse (pb_utils.TritonModelException), in a
module of its own so that api.py and metrics.py can share it."""

from __future__ import annotations


class TritonModelException(Exception):
    """Raised to fail a whole batch (or initialize / finalize); also what the API raises on misuse."""

    def message(self) -> str:
        return str(self)
