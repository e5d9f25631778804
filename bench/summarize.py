"""Prints the side-by-side table of one bench/run.sh run: images/s served by Nereid over HTTP (measured by
perf_analyzer, or by bench/load-client.ts where perf_analyzer cannot run) next to bare onnxruntime-node
images/s of the same model at the same batch size, and their ratio. Writes the table to <results>/summary.md.

Usage: python bench/summarize.py <results dir>
"""

from __future__ import annotations

import csv
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

TARGET_RATIO = 0.90
TARGET_BATCH = 8
_SERVED = re.compile(r"served-b(\d+)-c(\d+)\.(csv|json)$")


@dataclass(frozen=True)
class Served:
    batch: int
    concurrency: int
    images_per_sec: float
    p50_ms: float | None
    measurement: str


def read_bare(results: Path) -> dict[int, float]:
    """Bare images/s per batch size: the best of the runs before and after the served phase."""
    best: dict[int, float] = {}
    for name in ("bare.json", "bare-after.json"):
        path = results / name
        if not path.exists():
            continue
        for record in json.loads(path.read_text(encoding="utf-8")):
            batch = int(record["batch"])
            best[batch] = max(best.get(batch, 0.0), float(record["imagesPerSec"]))
    if not best:
        raise FileNotFoundError(f"no bare results in {results}")
    return best


def read_served(path: Path, batch: int, concurrency: int) -> Served:
    mode_path = path.with_suffix(".mode")
    measurement = mode_path.read_text(encoding="utf-8").strip() if mode_path.exists() else ""
    if path.suffix == ".json":
        record = json.loads(path.read_text(encoding="utf-8"))
        latency = float(record["p50LatencyMs"])
        return Served(
            batch, concurrency, float(record["inferencesPerSec"]), latency, measurement or "fixed window"
        )
    with path.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    if len(rows) != 1:
        raise ValueError(f"{path}: expected one measurement row, found {len(rows)}")
    row = rows[0]
    p50 = row.get("p50 latency")
    # perf_analyzer's Inferences/Second already counts batch x requests; latencies are in microseconds
    p50_ms = float(p50) / 1000 if p50 else None
    return Served(batch, concurrency, float(row["Inferences/Second"]), p50_ms, measurement)


def summarize(results: Path) -> str:
    bare = read_bare(results)
    served: list[Served] = []
    for path in sorted(results.iterdir()):
        match = _SERVED.match(path.name)
        if match:
            served.append(read_served(path, int(match.group(1)), int(match.group(2))))
    served.sort(key=lambda s: (s.batch, s.concurrency))
    meta_path = results / "meta.json"
    meta = json.loads(meta_path.read_text(encoding="utf-8")) if meta_path.exists() else {}

    lines = [
        f"Model `{meta.get('model', '?')}`, load generator: {meta.get('loadgen', '?')}, "
        f"{meta.get('seconds', '?')} s per point, {meta.get('cpus', '?')} CPUs, "
        f"commit {meta.get('commit', '?')}.",
        "",
        "| configuration | served images/s | bare images/s | served/bare | served p50 (ms) | measurement |",
        "|---|---:|---:|---:|---:|---|",
    ]
    best_at_target: float | None = None
    for s in served:
        base = bare.get(s.batch)
        ratio = s.images_per_sec / base if base else None
        if s.batch == TARGET_BATCH and ratio is not None:
            best_at_target = max(ratio, best_at_target or 0.0)
        lines.append(
            f"| batch {s.batch}, concurrency {s.concurrency} | {s.images_per_sec:.1f} | "
            + (f"{base:.1f}" if base else "n/a")
            + " | "
            + (f"{ratio:.2f}" if ratio is not None else "n/a")
            + " | "
            + (f"{s.p50_ms:.1f}" if s.p50_ms is not None else "n/a")
            + f" | {s.measurement} |"
        )
    lines.append("")
    loadavg = meta.get("loadavg")
    cpus = meta.get("cpus")
    if isinstance(loadavg, int | float) and isinstance(cpus, int) and loadavg > 0.25 * cpus:
        lines.append(
            f"Warning: the machine's load average was {loadavg} before the run ({cpus} CPUs); "
            "other work skews these numbers."
        )
        lines.append("")
    if best_at_target is None:
        lines.append(f"Target served/bare >= {TARGET_RATIO:.2f} at batch {TARGET_BATCH}: not measured.")
    else:
        verdict = "met" if best_at_target >= TARGET_RATIO else "NOT met"
        lines.append(
            f"Target served/bare >= {TARGET_RATIO:.2f} at batch {TARGET_BATCH}: "
            f"best {best_at_target:.2f} ({verdict})."
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    results = Path(argv[1])
    table = summarize(results)
    (results / "summary.md").write_text(table, encoding="utf-8")
    print(table, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
