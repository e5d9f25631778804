"""pb_utils.MetricFamily / Metric / MetricKind: a model's own metrics (Triton's Custom Metrics API), and
the snapshot of them the host asks for to show them on /metrics.

As in Triton, where they are prometheus-cpp series in the server: families are registered once per name
(a second MetricFamily with the same name and kind shares the first one's series and keeps its
description; another kind is an error), Metric objects with the same family and labels share one series,
and a series lives as long as a Metric object refers to it. Values live in this process; the host merges
the snapshots of a model's instances (src/backends/python/metrics.ts).
"""

from __future__ import annotations

import enum
import itertools
import math
import re
import threading
import time
import weakref
from typing import Any

from .errors import TritonModelException

_METRIC_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
_LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


class MetricKind(enum.IntEnum):
    COUNTER = 0
    GAUGE = 1
    HISTOGRAM = 2


_KIND_TEXT = {
    MetricKind.COUNTER: "TRITONSERVER_METRIC_KIND_COUNTER",
    MetricKind.GAUGE: "TRITONSERVER_METRIC_KIND_GAUGE",
    MetricKind.HISTOGRAM: "TRITONSERVER_METRIC_KIND_HISTOGRAM",
}
_KIND_WIRE = {MetricKind.COUNTER: "counter", MetricKind.GAUGE: "gauge", MetricKind.HISTOGRAM: "histogram"}

Labels = tuple[tuple[str, str], ...]


class _Series:
    """One labelled series, shared by every Metric object of that family and label set."""

    __slots__ = (
        "__weakref__",
        "bucket_counts",
        "buckets",
        "count",
        "family",
        "labels",
        "lock",
        "set_at",
        "value",
    )

    def __init__(self, family: str, labels: Labels, buckets: list[float] | None) -> None:
        self.family = family
        self.labels = labels
        self.buckets = buckets
        self.value = 0.0
        self.count = 0
        self.bucket_counts = [0] * (len(buckets) if buckets else 0)
        # Gauges: when set() was last called (CLOCK_MONOTONIC, comparable between the instances' processes).
        self.set_at = 0
        self.lock = threading.Lock()


_lock = threading.Lock()
# name -> (description, kind): prometheus-cpp keeps a family registered for good, so does this registry.
_families: dict[str, tuple[str, MetricKind]] = {}
_series: weakref.WeakValueDictionary[tuple[str, Labels], _Series] = weakref.WeakValueDictionary()


class Metric:
    """A handle on one series: increment (counter, gauge), set (gauge), observe (histogram), value."""

    __slots__ = ("_kind", "_series")

    def __init__(self, kind: MetricKind, series: _Series) -> None:
        self._kind = kind
        self._series = series

    def _unsupported(self, what: str, operation: str) -> TritonModelException:
        return TritonModelException(f"{what}: {_KIND_TEXT[self._kind]} does not support {operation}")

    def increment(self, value: float) -> None:
        if self._kind == MetricKind.HISTOGRAM:
            raise self._unsupported("Failed to increment metric value", "Increment")
        v = float(value)
        if self._kind == MetricKind.COUNTER and v < 0:
            raise TritonModelException(
                "Failed to increment metric value: TRITONSERVER_METRIC_KIND_COUNTER can only be incremented "
                "monotonically by non-negative values."
            )
        s = self._series
        with s.lock:
            s.value += v

    def set(self, value: float) -> None:
        if self._kind != MetricKind.GAUGE:
            raise self._unsupported("Failed to set metric value", "Set")
        s = self._series
        with s.lock:
            s.value = float(value)
            s.set_at = time.monotonic_ns()

    def observe(self, value: float) -> None:
        if self._kind != MetricKind.HISTOGRAM:
            raise self._unsupported("Failed to observe metric value", "Observe")
        v = float(value)
        s = self._series
        with s.lock:
            s.value += v
            s.count += 1
            for i, bound in enumerate(s.buckets or ()):
                if v <= bound:
                    s.bucket_counts[i] += 1

    def value(self) -> float:
        if self._kind == MetricKind.HISTOGRAM:
            raise self._unsupported("Failed to get metric value", "Value")
        s = self._series
        with s.lock:
            return s.value


class MetricFamily:
    COUNTER = MetricKind.COUNTER
    GAUGE = MetricKind.GAUGE
    HISTOGRAM = MetricKind.HISTOGRAM

    def __init__(self, name: str, description: str, kind: MetricKind) -> None:
        if name is None or description is None or kind is None:
            raise TypeError("MetricFamily(): name, description and kind must not be None")
        if not isinstance(name, str) or not _METRIC_NAME.match(name):
            raise TritonModelException(f"Error when creating MetricFamily: Invalid metric name '{name}'")
        try:
            kind = MetricKind(int(kind))
        except ValueError:
            raise TritonModelException("Error when creating MetricFamily: Unknown metric kind") from None
        with _lock:
            known = _families.get(name)
            if known is None:
                _families[name] = (str(description), kind)
            elif known[1] != kind:
                raise TritonModelException(
                    f"Error when creating MetricFamily: metric family '{name}' already exists with "
                    "another kind"
                )
        self._name = name
        self._kind = kind

    def Metric(self, labels: dict[str, str] | None = None, buckets: list[float] | None = None) -> Metric:
        if labels is not None and not isinstance(labels, dict):
            raise TritonModelException("Failed to create metric. Labels must be a dictionary.")
        if buckets is not None:
            if not isinstance(buckets, list):
                raise TritonModelException("Failed to create metric. Buckets must be a list.")
            if self._kind != MetricKind.HISTOGRAM:
                raise TritonModelException("Failed to create metric. Unexpected buckets found.")
        elif self._kind == MetricKind.HISTOGRAM:
            raise TritonModelException("Failed to create metric. Missing required buckets.")
        for k, v in (labels or {}).items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise TritonModelException(
                    f"Error when creating Metric: Parameter [{k}] must have a type of "
                    "TRITONSERVER_PARAMETER_STRING to be added as a label."
                )
            if not _LABEL_NAME.match(k) or k.startswith("__"):
                raise TritonModelException(f"Error when creating Metric: Invalid label name '{k}'")
        bounds: list[float] | None = None
        if buckets is not None:
            bounds = [float(b) for b in buckets]
            if any(math.isnan(b) for b in bounds) or any(a >= b for a, b in itertools.pairwise(bounds)):
                raise TritonModelException(
                    "Error when creating Metric: Bucket Boundaries must be strictly sorted"
                )
        key = (self._name, tuple(sorted((labels or {}).items())))
        with _lock:
            series = _series.get(key)
            if series is None:
                # The first Metric of a series fixes its buckets (prometheus-cpp returns the existing one).
                series = _Series(self._name, key[1], bounds)
                _series[key] = series
        return Metric(self._kind, series)


def _number(v: float) -> float | str:
    """JSON has no NaN or infinities: those travel as Prometheus spells them."""
    if math.isfinite(v):
        return v
    return "NaN" if math.isnan(v) else ("+Inf" if v > 0 else "-Inf")


def snapshot() -> list[dict[str, Any]]:
    """Every family with a live series, as the METRICS frame carries them (see src/backends/python)."""
    with _lock:
        live = list(_series.values())
        families = dict(_families)
    by_family: dict[str, list[dict[str, Any]]] = {}
    for s in live:
        with s.lock:
            entry: dict[str, Any] = {"l": dict(s.labels), "v": _number(s.value)}
            if s.buckets is not None:
                entry["b"] = [_number(b) for b in s.buckets]
                entry["bc"] = list(s.bucket_counts)
                entry["c"] = s.count
            if s.set_at:
                entry["s"] = s.set_at
        by_family.setdefault(s.family, []).append(entry)
    out: list[dict[str, Any]] = []
    for name, entries in sorted(by_family.items()):
        description, kind = families[name]
        out.append({"n": name, "d": description, "k": _KIND_WIRE[kind], "m": entries})
    return out
