"""What Nereid's framework backends (python/backends/pytorch, python/backends/openvino) share: reading a
model's `parameters` the way Triton's backends do, the fair default thread count of an instance, and the
dynamic batcher's other half (the Python backend hands `execute` a list of requests; a framework model runs
them as one batch over dim 0 and gives each request its rows back).

Nothing here imports a framework: it runs in every stub's interpreter.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

_TRUE = frozenset({"true", "yes", "on", "1"})
_FALSE = frozenset({"false", "no", "off", "0"})


class ConfigError(ValueError):
    """A model's config or files that the backend cannot serve: the model fails to load with this text."""


def parameters(model_config: dict[str, Any]) -> dict[str, str]:
    """The config's `parameters` as plain strings (`{key: {string_value: v}}` → `{key: v}`)."""
    raw = model_config.get("parameters") or {}
    out: dict[str, str] = {}
    if isinstance(raw, dict):
        for key, value in raw.items():
            if isinstance(value, dict):
                out[str(key)] = str(value.get("string_value", ""))
            elif value is not None:
                out[str(key)] = str(value)
    return out


def flag(params: dict[str, str], key: str, default: bool) -> bool:
    """A boolean parameter: true/false, yes/no, on/off, 1/0 in any case; absent or empty is `default`."""
    value = params.get(key, "").strip().lower()
    if value == "":
        return default
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ConfigError(f"parameter '{key}' must be true or false, got '{params[key]}'")


def count(params: dict[str, str], key: str, minimum: int = 1) -> int | None:
    """An integer parameter of at least `minimum`, or None when absent or empty."""
    text = params.get(key, "").strip()
    if text == "":
        return None
    try:
        value = int(text, 10)
    except ValueError:
        raise ConfigError(f"parameter '{key}' must be an integer, got '{params[key]}'") from None
    if value < minimum:
        raise ConfigError(f"parameter '{key}' must be at least {minimum}, got {value}")
    return value


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, which a container's cpuset narrows)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def instance_count(model_config: dict[str, Any]) -> int:
    """How many instances of this model run (the sum of its instance groups' counts, at least 1)."""
    total = 0
    for group in model_config.get("instance_group") or []:
        if isinstance(group, dict):
            try:
                total += max(0, int(group.get("count", 1)))
            except (TypeError, ValueError):
                total += 1
    return max(1, total)


def fair_threads(model_config: dict[str, Any]) -> int:
    """An instance's default framework thread count: the usable cores divided among this model's instances,
    at least 1. Each instance is a process with its own pools, so N instances each sized to every core
    would run N * cores threads on `cores` cores (the oversubscription Triton users meet)."""
    return max(1, usable_cores() // instance_count(model_config))


def limit_native_pools(threads: int) -> None:
    """Sizes the OpenMP/MKL/OpenBLAS pools a framework starts on import, and makes idle OpenMP workers sleep
    (OMP_WAIT_POLICY=PASSIVE) instead of spinning. Call before importing it; a value the operator put in the
    environment is kept.

    Why passive: after each parallel region OpenMP's workers spin-wait by default, holding the cores. Called
    in a loop that costs nothing, but in a stub the next request must first be read by the stub's main thread
    and written by the server process, and spinning workers take those cores from them: measured with
    bench/frameworks.py on 2 cores, a TorchScript MLP served at batch 8 went from 179 to 427 rows/s (the wait
    before execute started from 37 ms to 14 ms a request) under a load average of 9-11."""
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(var, str(threads))
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


@dataclass(frozen=True)
class Batch:
    """Requests' inputs joined over dim 0: `inputs[name]` holds every request's rows in request order,
    `sizes[i]` is request i's row count."""

    inputs: dict[str, npt.NDArray[Any]]
    sizes: list[int]


def join_requests(per_request: Sequence[dict[str, npt.NDArray[Any]]]) -> Batch | None:
    """One batch from several requests' inputs (name → array with the batch on dim 0), or None when they
    cannot be joined (different input names, or shapes that differ past dim 0): run them one by one."""
    if not per_request:
        return None
    names = list(per_request[0])
    sizes: list[int] = []
    for inputs in per_request:
        if list(inputs) != names:
            return None
        batch = None
        for name in names:
            array = inputs[name]
            if array.ndim == 0:
                return None
            if batch is None:
                batch = int(array.shape[0])
            elif int(array.shape[0]) != batch:
                return None
            if array.shape[1:] != per_request[0][name].shape[1:]:
                return None
            if array.dtype != per_request[0][name].dtype:
                return None
        sizes.append(batch or 0)
    if len(per_request) == 1:
        return Batch(dict(per_request[0]), sizes)
    joined = {name: np.concatenate([inputs[name] for inputs in per_request], axis=0) for name in names}
    return Batch(joined, sizes)


def split_rows(
    outputs: dict[str, npt.NDArray[Any]], sizes: Sequence[int]
) -> list[dict[str, npt.NDArray[Any]]]:
    """Each request's rows of the batch's outputs (the inverse of join_requests)."""
    total = sum(sizes)
    for name, array in outputs.items():
        if array.ndim == 0 or int(array.shape[0]) != total:
            shape = list(array.shape)
            raise ValueError(
                f"output '{name}' has shape {shape}: its dim 0 is not the batch of {total} rows given"
            )
    out: list[dict[str, npt.NDArray[Any]]] = []
    start = 0
    for size in sizes:
        out.append({name: array[start : start + size] for name, array in outputs.items()})
        start += size
    return out


def run_batched(
    per_request: Sequence[dict[str, npt.NDArray[Any]]],
    run: Callable[[dict[str, npt.NDArray[Any]]], dict[str, npt.NDArray[Any]]],
    batching: bool,
) -> list[dict[str, npt.NDArray[Any]] | BaseException]:
    """Every request's outputs, or the error that request got: one `run` over the joined batch when the
    model batches and the requests can be joined, else one `run` per request."""
    if batching and len(per_request) > 1:
        batch = join_requests(per_request)
        if batch is not None:
            try:
                return list(split_rows(run(batch.inputs), batch.sizes))
            except Exception as e:
                return [e for _ in per_request]
    results: list[dict[str, npt.NDArray[Any]] | BaseException] = []
    for inputs in per_request:
        try:
            results.append(run(inputs))
        except Exception as e:
            results.append(e)
    return results


def config_tensors(model_config: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    """The config's `input` or `output` entries (dicts only)."""
    return [entry for entry in model_config.get(kind) or [] if isinstance(entry, dict)]


def names(entries: Iterable[dict[str, Any]]) -> list[str]:
    return [str(entry.get("name", "")) for entry in entries]


def responses(
    request_count: int,
    failures: dict[int, str],
    results: Iterable[dict[str, npt.NDArray[Any]] | BaseException],
    framework: str,
) -> list[Any]:
    """One InferenceResponse per request, in order: INVALID_ARG for a request refused before the run
    (`failures`, by index), "<framework> execute failure: ..." for one whose run raised, else its outputs.
    `results` holds the runs of the other requests, in order."""
    import triton_python_backend_utils as pb_utils  # the stub's module, imported when a model answers

    ran = iter(results)
    out: list[Any] = []
    for i in range(request_count):
        if i in failures:
            error = pb_utils.TritonError(failures[i], pb_utils.TritonError.INVALID_ARG)
            out.append(pb_utils.InferenceResponse(error=error))
            continue
        result = next(ran)
        if isinstance(result, BaseException):
            error = pb_utils.TritonError(f"{framework} execute failure: {result}")
            out.append(pb_utils.InferenceResponse(error=error))
            continue
        tensors = [pb_utils.Tensor(name, array) for name, array in result.items()]
        out.append(pb_utils.InferenceResponse(output_tensors=tensors))
    return out


def execute(
    requests: Sequence[Any],
    input_names: Iterable[str],
    run: Callable[[dict[str, npt.NDArray[Any]]], dict[str, npt.NDArray[Any]]],
    batching: bool,
    framework: str,
) -> list[Any]:
    """A framework backend's execute(): each request's inputs by name (a request missing one is refused
    with INVALID_ARG), one batched `run` over the others where the model batches, one response each."""
    import triton_python_backend_utils as pb_utils  # the stub's module, imported when a model answers

    wanted = list(input_names)
    per_request: list[dict[str, npt.NDArray[Any]]] = []
    failures: dict[int, str] = {}
    for i, request in enumerate(requests):
        inputs: dict[str, npt.NDArray[Any]] = {}
        for name in wanted:
            tensor = pb_utils.get_input_tensor_by_name(request, name)
            if tensor is None:
                failures[i] = f"expected input '{name}' in the request"
                break
            inputs[name] = tensor.as_numpy()
        per_request.append(inputs)
    runnable = [inputs for i, inputs in enumerate(per_request) if i not in failures]
    return responses(len(requests), failures, run_batched(runnable, run, batching), framework)
