"""Turns one bench/transport run (perf_analyzer CSVs named <target>-<protocol>-<payload>-c<concurrency>.csv)
into the side-by-side table: Nereid and the bare echo server per protocol, payload and concurrency, with
requests/s, p50 and p99, and Nereid / bare. Prints it and writes summary.md beside the CSVs.

Usage: .venv/bin/python bench/transport/summarize.py bench/results/transport-<time>
"""

from __future__ import annotations

import csv
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

TARGET_RATIO = 0.60
NAME = re.compile(r"^(nereid|echo|builtin|evloop)-(http|grpc)-(\d+)-c(\d+)\.csv$")

# Diagnostic variants of Nereid measured beside the main pair: (target, column label, what it is).
DIAGNOSTICS = (
    ("evloop", "event loop", 'the same onnxruntime model with `execution_thread: "event_loop"`'),
    ("builtin", "builtin", "the built-in identity backend (no onnxruntime): the frontends and core alone"),
)
BARE = {"http": "bare node:http echo", "grpc": "bare @grpc/grpc-js echo"}


@dataclass(frozen=True)
class Point:
    rate: float  # requests/s (batch 1, so inferences/s too)
    p50_us: float
    p99_us: float
    mode: str

    @property
    def unstable(self) -> bool:
        return not self.mode.startswith("stable within 15%")


def read_point(path: Path) -> Point:
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    if len(rows) != 1:
        raise ValueError(f"{path}: expected one row, got {len(rows)}")
    row = rows[0]
    mode_file = path.with_suffix(".mode")
    mode = mode_file.read_text(encoding="utf-8").strip() if mode_file.exists() else "unknown"
    return Point(float(row["Inferences/Second"]), float(row["p50 latency"]), float(row["p99 latency"]), mode)


def payload_label(values: int) -> str:
    size = values * 4
    text = f"{size} B" if size < 1024 else f"{size / 1000:.0f} KB"
    return f"[1,{values}] FP32 ({text})"


def ms(us: float) -> str:
    return f"{us / 1000:.2f}"


def summarize(results: Path) -> str:
    meta = json.loads((results / "meta.json").read_text(encoding="utf-8"))
    points: dict[tuple[str, str, int, int], Point] = {}
    for path in sorted(results.glob("*.csv")):
        match = NAME.match(path.name)
        if match:
            target, protocol, payload, c = match.groups()
            points[(target, protocol, int(payload), int(c))] = read_point(path)

    keys = sorted({(p, payload, c) for (_t, p, payload, c) in points}, key=lambda k: (k[1], k[0], k[2]))
    present = {t for (t, _p, _payload, _c) in points}
    diagnostics = [d for d in DIAGNOSTICS if d[0] in present]
    diag_head = "".join(f" {label} req/s | {label} / bare |" for _t, label, _w in diagnostics)
    diag_rule = "---:|---:|" * len(diagnostics)
    lines = [
        "# Transport benchmark",
        "",
        f"Model `{meta['model']}` (identity in onnxruntime for Nereid; a byte echo for the bare servers), "
        f"batch 1, perf_analyzer ({meta.get('perf_analyzer', '?')}) with {meta['seconds']} s per point. "
        f"{meta['cpus']} CPUs, node {meta['node']}, commit {meta['commit']}, 1-minute load average "
        f"{meta['loadavg_before']} before and {meta.get('loadavg_after', '?')} after the run.",
        "",
        "| payload | protocol | conc. | Nereid req/s | p50 ms | p99 ms | bare req/s | p50 ms | p99 ms "
        "| Nereid / bare |" + diag_head,
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|" + diag_rule,
    ]
    ratios: dict[str, list[float]] = {}
    for protocol, payload, c in keys:
        nereid = points.get(("nereid", protocol, payload, c))
        bare = points.get(("echo", protocol, payload, c))
        if nereid is None or bare is None:
            continue
        ratio = nereid.rate / bare.rate if bare.rate > 0 else float("nan")
        ratios.setdefault(protocol, []).append(ratio)
        flag = " *" if nereid.unstable or bare.unstable else ""
        mark = "" if ratio >= TARGET_RATIO else " (below target)"
        extra = ""
        for target, _label, _what in diagnostics:
            diag = points.get((target, protocol, payload, c))
            ok = diag is not None and bare.rate > 0
            extra += f" {diag.rate:,.0f} | {diag.rate / bare.rate:.0%} |" if diag and ok else " - | - |"
        lines.append(
            f"| {payload_label(payload)} | {protocol} | {c} | {nereid.rate:,.0f} | {ms(nereid.p50_us)} | "
            f"{ms(nereid.p99_us)} | {bare.rate:,.0f} | {ms(bare.p50_us)} | {ms(bare.p99_us)} | "
            f"{ratio:.0%}{mark}{flag} |{extra}"
        )
    lines.append("")
    for protocol, values in sorted(ratios.items()):
        below = sum(v < TARGET_RATIO for v in values)
        verdict = (
            f"meets the {TARGET_RATIO:.0%} target at every point"
            if below == 0
            else f"below the {TARGET_RATIO:.0%} target at {below} of {len(values)} points"
        )
        lines.append(
            f"- Nereid {protocol.upper()} / {BARE[protocol]}: {min(values):.0%} to {max(values):.0%}"
        )
        lines.append(f"  ({verdict})")
    lines.append("")
    lines.append(
        "`*` a side did not stabilise within 15 % (see the .mode files); such ratios are rough. "
        "p50/p99 are perf_analyzer's client-side latencies."
        + "".join(f" {label}: Nereid serving {what}." for _t, label, what in diagnostics)
    )
    load = max(float(meta["loadavg_before"]), float(meta.get("loadavg_after", 0)))
    if load > 1.0:
        lines.append(
            f"**The machine was busy (load average up to {load:.1f} on {meta['cpus']} CPUs): "
            "absolute numbers are not representative; ratios are only indicative.**"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    results = Path(sys.argv[1])
    text = summarize(results)
    (results / "summary.md").write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
