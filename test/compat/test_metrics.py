"""The Prometheus endpoint (--metrics-port) as a scraper sees it: Triton's nv_* family names, types and
model/version labels, and counters that move by exactly what inferences over HTTP and gRPC did."""

from __future__ import annotations

import re
import urllib.request
from typing import Any

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

from model_repo import BUNDLED_MODELS

SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$")
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')

Key = tuple[str, frozenset[tuple[str, str]]]


class Scrape:
    def __init__(self, text: str) -> None:
        self.text = text
        self.types: dict[str, str] = {}
        self.helps: dict[str, str] = {}
        self.samples: dict[Key, float] = {}
        for line in text.splitlines():
            if line.startswith("# TYPE "):
                _, _, name, kind = line.split(" ", 3)
                self.types[name] = kind
            elif line.startswith("# HELP "):
                _, _, name, *rest = line.split(" ", 3)
                self.helps[name] = rest[0] if rest else ""
            elif line and not line.startswith("#"):
                match = SAMPLE.match(line)
                assert match, f"not a Prometheus sample line: {line!r}"
                labels = frozenset(LABEL.findall(match.group(2) or ""))
                self.samples[(match.group(1), labels)] = float(match.group(3))

    def value(self, name: str, **labels: str) -> float:
        key = (name, frozenset(labels.items()))
        assert key in self.samples, f"no sample {name}{labels}"
        return self.samples[key]

    def series(self, name: str) -> list[dict[str, str]]:
        return [dict(labels) for (n, labels) in self.samples if n == name]


def _scrape(server: Any) -> Scrape:
    with urllib.request.urlopen(f"http://{server.url('metrics')}/metrics", timeout=30) as answer:
        assert answer.status == 200
        assert answer.headers["Content-Type"].startswith("text/plain")
        return Scrape(answer.read().decode("utf-8"))


def _simple(lib: Any, batch: int) -> list[Any]:
    inputs = [lib.InferInput("INPUT0", [batch, 16], "INT32"), lib.InferInput("INPUT1", [batch, 16], "INT32")]
    for tensor in inputs:
        tensor.set_data_from_numpy(np.ones((batch, 16), dtype=np.int32))
    return inputs


COUNTERS = (
    "nv_inference_request_success",
    "nv_inference_request_failure",
    "nv_inference_count",
    "nv_inference_exec_count",
    "nv_inference_request_duration_us",
    "nv_inference_queue_duration_us",
    "nv_inference_compute_input_duration_us",
    "nv_inference_compute_infer_duration_us",
    "nv_inference_compute_output_duration_us",
)


def test_families_types_and_labels(server: Any) -> None:
    scrape = _scrape(server)
    for name in COUNTERS:
        assert scrape.types.get(name) == "counter", name
        assert scrape.helps.get(name), f"{name} has no HELP text"
    assert scrape.types.get("nv_inference_pending_request_count") == "gauge"
    assert scrape.types.get("nv_model_load_duration_secs") == "gauge"
    for model in BUNDLED_MODELS:
        labels = {"model": model, "version": "1"}
        assert scrape.value("nv_inference_count", **labels) >= 0
        assert scrape.value("nv_model_load_duration_secs", **labels) > 0
        reasons = {s["reason"] for s in scrape.series("nv_inference_request_failure") if s["model"] == model}
        assert reasons == {"REJECTED", "CANCELED", "BACKEND", "OTHER"}, (model, reasons)
    assert scrape.value("nv_cpu_memory_total_bytes") > 0
    assert 0 <= scrape.value("nv_cpu_utilization") <= 1


def test_counters_move_with_inferences(server: Any, client: Any, grpc: Any) -> None:
    labels = {"model": "simple", "version": "1"}

    def successes() -> int:
        stats = client.get_inference_statistics(model_name="simple", model_version="1")["model_stats"][0]
        count = stats["inference_stats"]["success"]["count"]
        assert isinstance(count, int)
        return count

    stats_before = successes()
    before = _scrape(server)
    for _ in range(3):
        client.infer("simple", _simple(httpclient, 2))
    for _ in range(2):
        grpc.infer("simple", _simple(grpcclient, 4))
    after = _scrape(server)

    def delta(name: str) -> float:
        return after.value(name, **labels) - before.value(name, **labels)

    assert delta("nv_inference_request_success") == 5
    assert delta("nv_inference_count") == 3 * 2 + 2 * 4
    assert 1 <= delta("nv_inference_exec_count") <= 5
    assert delta("nv_inference_request_duration_us") > 0
    assert delta("nv_inference_compute_infer_duration_us") > 0
    for reason in ("REJECTED", "CANCELED", "BACKEND", "OTHER"):
        assert after.value("nv_inference_request_failure", reason=reason, **labels) == before.value(
            "nv_inference_request_failure", reason=reason, **labels
        )
    # other models did not move
    other = {"model": "simple_int8", "version": "1"}
    assert after.value("nv_inference_count", **other) == before.value("nv_inference_count", **other)
    # the statistics extension saw the same requests
    assert successes() - stats_before == delta("nv_inference_request_success")
