"""The tables of bench/before-after.sh: one per bench, each metric's before, after and after/before.

Reads the folder before-after.sh wrote, <out>/<bench>/<side>-<round>/ (side: before or after) holding each
bench's own results (bench/run.sh's, bench/transport/run.sh's, bench/overload/run.sh's result folders;
javascript.json of dist/bench/javascript.js; cache.md of dist/bench/cache/run.js), and prints markdown.

Per metric: the values of every round of each side (median first when there are several), after/before of
the medians, and, with two rounds or more, each side's run-to-run spread (max/min - 1) and a mark where
after is worse than before by more than the larger spread ("worse"): the "no regression beyond run-to-run
spread" test of issue 29. "higher" / "lower" says which way is better.

Usage: .venv/bin/python bench/before_after.py <out folder>
"""

from __future__ import annotations

import csv
import json
import re
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

# metric name -> (value, "higher" or "lower" is better)
Metrics = dict[str, tuple[float, str]]


def perf_csv(path: Path) -> dict[str, str]:
    with path.open(newline="") as f:
        return next(csv.DictReader(f))


def unstable(run: Path, out: Metrics) -> None:
    """How many points of a run did not stabilise even within 50 % and were measured once over a fixed
    request count (their <point>.mode says "unstable"): those numbers are rough, whichever side they are."""
    modes = list(run.glob("*.mode"))
    bad = sum(1 for m in modes if m.read_text().startswith("unstable"))
    out[f"points measured unstable (of {len(modes)})"] = (float(bad), "lower")


def onnx(run: Path) -> Metrics:
    """bench/run.sh: served req/s per batch and concurrency, the best bare run per batch, served/bare."""
    out: Metrics = {}
    bare: dict[int, float] = {}
    for name in ("bare.json", "bare-after.json"):
        path = run / name
        if path.exists():
            for record in json.loads(path.read_text()):
                batch = int(record["batch"])
                bare[batch] = max(bare.get(batch, 0.0), float(record["imagesPerSec"]))
    for batch, rate in sorted(bare.items()):
        out[f"bare onnxruntime b{batch}, inferences/s"] = (rate, "higher")
    points = []
    for path in run.glob("served-b*-c*.csv"):
        m = re.fullmatch(r"served-b(\d+)-c(\d+)\.csv", path.name)
        if m:
            points.append((int(m[1]), int(m[2]), path))
    for batch, c, path in sorted(points):
        row = perf_csv(path)
        rate = float(row["Inferences/Second"])
        out[f"served b{batch} c{c}, inferences/s"] = (rate, "higher")
        out[f"served b{batch} c{c}, p99 ms"] = (float(row["p99 latency"]) / 1000, "lower")
        if bare.get(batch):
            out[f"served/bare b{batch} c{c}"] = (rate / bare[batch], "higher")
    unstable(run, out)
    return out


def transport(run: Path) -> Metrics:
    """bench/transport/run.sh: Nereid's req/s and p99 per protocol, payload and concurrency, and Nereid/echo
    (the echo servers are this checkout's on both sides: the ratio takes out some of the machine's drift)."""
    rates: dict[tuple[str, str, int, int], tuple[float, float]] = {}
    for path in run.glob("*.csv"):
        m = re.fullmatch(r"(nereid|echo|builtin|evloop)-(http|grpc)-(\d+)-c(\d+)\.csv", path.name)
        if m:
            row = perf_csv(path)
            key = (m[1], m[2], int(m[3]), int(m[4]))
            rates[key] = (float(row["Inferences/Second"]), float(row["p99 latency"]) / 1000)
    out: Metrics = {}
    for (target, protocol, payload, c), (rate, p99) in sorted(rates.items()):
        if target == "echo":
            continue
        size = f"{payload * 4:,} B" if payload * 4 < 10_000 else f"{payload * 4 / 1024:.0f} KB"
        label = f"{target} {protocol} {size} c{c}"
        out[f"{label}, req/s"] = (rate, "higher")
        out[f"{label}, p99 ms"] = (p99, "lower")
        echo = rates.get(("echo", protocol, payload, c))
        if echo and echo[0]:
            out[f"{label}, / echo"] = (rate / echo[0], "higher")
    unstable(run, out)
    return out


def javascript(run: Path) -> Metrics:
    """dist/bench/javascript.js: µs per request of the JS and ONNX identities, in-process and HTTP req/s."""
    data = json.loads((run / "javascript.json").read_text())
    out: Metrics = {}
    for p in data["overhead"]:
        side = "JS" if p["side"] == "identity_js" else "ONNX"
        out[f"{side} identity {p['elements']} FP32 c{p['concurrency']}, µs/request"] = (
            float(p["usPerRequest"]),
            "lower",
        )
    for v in data["versus"]:
        c = v["concurrency"]
        out[f"identity_js in-process c{c}, req/s"] = (float(v["inProcess"]), "higher")
        out[f"identity_js HTTP c{c}, req/s"] = (float(v["http"]), "higher")
    for copy in data["copies"]:
        out[f"copies, input in {copy['input']}, µs/request"] = (float(copy["usPerRequest"]), "lower")
    return out


def number(cell: str) -> float | None:
    m = re.search(r"-?[0-9][0-9,]*(?:\.[0-9]+)?", cell)
    return float(m[0].replace(",", "")) if m else None


def cache(run: Path) -> Metrics:
    """dist/bench/cache/run.js: hit and miss req/s per model, cache and concurrency; Nereid's identity
    backend's req/s and a local hit of simple over the echo's."""
    out: Metrics = {}
    for line in (run / "cache.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 6 or cells[0] in ("model", "") or cells[0].startswith("---"):
            continue
        if cells[0].isdigit() and len(cells) >= 5:
            # the second table: the echo, Nereid's identity backend and a local hit of simple
            identity, hit_echo = number(cells[2]), number(cells[4])
            if identity is not None and hit_echo is not None:
                out[f"identity backend (no cache) c{cells[0]}, req/s"] = (identity, "higher")
                out[f"simple local hit / echo c{cells[0]}"] = (hit_echo, "higher")
            continue
        model, kind, c = cells[0], cells[1], cells[2]
        hit, miss = number(cells[3]), number(cells[4])
        if not c.isdigit() or hit is None or miss is None:
            continue
        out[f"{model} {kind} c{c}, hit req/s"] = (hit, "higher")
        out[f"{model} {kind} c{c}, miss req/s"] = (miss, "higher")
    return out


def overload(run: Path) -> Metrics:
    """bench/overload/run.sh: per scenario, accepted and lost requests, accepted and health-probe p99, and
    the server's peak RSS; the capacity the first scenario measured."""
    out: Metrics = {}
    for scenario in ("capacity", "connections", "soak", "json"):
        path = run / f"{scenario}.json"
        if not path.exists():
            continue
        r = json.loads(path.read_text())
        load, health = r["load"], r["health"]
        if isinstance(r.get("capacityPerSecond"), (int, float)):
            out[f"{scenario}: measured capacity, req/s"] = (float(r["capacityPerSecond"]), "higher")
        out[f"{scenario}: accepted"] = (float(load["ok"]), "higher")
        out[f"{scenario}: lost"] = (float(load["lost"]), "lower")
        out[f"{scenario}: accepted p99 ms"] = (float(load["acceptedMs"]["p99"]), "lower")
        probes = (("fresh", "new connection"), ("kept", "kept-alive"), ("healthPort", "health port"))
        for key, label in probes:
            if key in health and isinstance(health[key].get("p99"), (int, float)):
                out[f"{scenario}: health p99 ms, {label}"] = (float(health[key]["p99"]), "lower")
        out[f"{scenario}: peak RSS MB"] = (float(r["rss"]["peakMb"]), "lower")
    return out


BENCHES: dict[str, tuple[str, Callable[[Path], Metrics]]] = {
    "onnx": ("onnxruntime served / bare (bench/run.sh)", onnx),
    "transport": ("Transport (bench/transport/run.sh)", transport),
    "javascript": ("JavaScript backend (dist/bench/javascript.js)", javascript),
    "cache": ("Response cache (dist/bench/cache/run.js)", cache),
    "overload": ("Overload (bench/overload/run.sh)", overload),
}


def fmt(x: float) -> str:
    if x == 0 or abs(x) >= 100:
        return f"{x:,.0f}"
    return f"{x:.3g}" if abs(x) < 10 else f"{x:.1f}"


def spread(values: list[float]) -> float:
    lo, hi = min(values), max(values)
    return hi / lo - 1 if lo > 0 else 0.0


def cell(values: list[float]) -> str:
    if not values:
        return "-"
    if len(values) == 1:
        return fmt(values[0])
    return f"**{fmt(statistics.median(values))}** ({' / '.join(fmt(v) for v in values)})"


def table(runs: dict[str, list[Metrics]]) -> list[str]:
    """One bench's rows from its runs per side."""
    names: list[str] = []
    for side in ("before", "after"):
        for m in runs.get(side, []):
            names += [n for n in m if n not in names]
    rounds = max((len(v) for v in runs.values()), default=0)
    head = "| metric | better | before | after | after/before |"
    rule = "|---|---|---:|---:|---:|"
    if rounds >= 2:
        head += " spread before / after | worse beyond spread |"
        rule += "---:|---|"
    lines = [head, rule]
    for name in names:
        values = {s: [m[name][0] for m in runs.get(s, []) if name in m] for s in ("before", "after")}
        better = next(m[name][1] for s in ("before", "after") for m in runs.get(s, []) if name in m)
        b, a = values["before"], values["after"]
        ratio = statistics.median(a) / statistics.median(b) if a and b and statistics.median(b) else None
        row = f"| {name} | {better} | {cell(b)} | {cell(a)} | {'-' if ratio is None else f'{ratio:.2f}'} |"
        if rounds >= 2:
            if len(a) >= 2 and len(b) >= 2 and ratio is not None:
                allowed = max(spread(a), spread(b))
                worse = ratio < 1 / (1 + allowed) if better == "higher" else ratio > 1 + allowed
                row += f" {spread(b):.0%} / {spread(a):.0%} | {'**worse**' if worse else ''} |"
            else:
                row += " - | |"
        lines.append(row)
    return lines


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: before_after.py <out folder of bench/before-after.sh>", file=sys.stderr)
        return 2
    out = Path(argv[1])
    meta_path = out / "meta.json"
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    lines = [
        f"Before {meta.get('before', '?')}, after {meta.get('after', '?')}; "
        f"{meta.get('rounds', '?')} round(s), "
        f"{meta.get('cpus', '?')} CPUs, load average {meta.get('load_start', '?')} at the start and "
        f"{meta.get('load_end', '?')} at the end.",
    ]
    for bench, (title, read) in BENCHES.items():
        folder = out / bench
        if not folder.is_dir():
            continue
        runs: dict[str, list[Metrics]] = {"before": [], "after": []}
        failed: list[str] = []
        for run in sorted(p for p in folder.iterdir() if p.is_dir()):
            side = run.name.split("-")[0]
            if side not in runs:
                continue
            try:
                metrics = read(run)
            except (OSError, KeyError, ValueError, StopIteration) as e:
                failed.append(f"{run.name}: no results ({type(e).__name__}: {e}); see {run}.log")
                continue
            if not metrics:
                failed.append(f"{run.name}: no results; see {run}.log")
                continue
            runs[side].append(metrics)
        lines += ["", f"### {title}", ""]
        if runs["before"] or runs["after"]:
            lines += table(runs)
        lines += [f"- {x}" for x in failed]
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
