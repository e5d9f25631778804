"""Nereid against the real Triton 2.51 on the same Python models, side by side (bench/README.md, "Nereid
vs Triton"). Both servers serve one copy of bench/vs-triton/models and run their Python stubs on the same
interpreter and numpy (.venv-triton's, which Triton's stub embeds). Installs nothing: Triton comes from
scripts/setup-triton.sh (the differential tests' setup), perf_analyzer from scripts/setup-python.sh.

Per case, the two servers take turns point by point (Nereid, Triton, Triton, Nereid, ...: the side that
goes first alternates each round), each point three perf_analyzer time windows (--window-ms each). Per point:
requests/s and p99 (perf_analyzer), and CPU per request of the server process and of its stub processes
separately (utime+stime from /proc over the point, divided by the requests the model's statistics
counted). Then the cold start of 20 Python models (process start to /v2/health/ready), alternated too.

Noise: the machine is shared, so every point also measures how much CPU *other* processes used meanwhile
(/proc/stat busy time minus the servers', their stubs' and perf_analyzer's), as a share of all cores. A
point where others took more than --noise-limit (default 25 %) of the machine is marked noisy, and so is
a case whose two measurements of the same server differ by more than --spread-limit (25 %). The verdict
(every target met or not) is printed only when no point is noisy; otherwise the table is printed with
the reason and "no verdict". The 1-minute load average is recorded before and after every point.

perf_analyzer's memory: perf_analyzer 2.60 copies every request's input tensors and every response's output
tensors into its request records (InferContext::SendRequest's GetInputs() and the response callback's
GetOutputs(), kept for --profile-export-file but recorded whether or not it is given; no option turns it
off), and copies the records twice more on their way to a window's summary (SwapRequestRecords, then into
all_request_records_). At 1.2 MB per request (the 600 KB identity's input and output) runs of 200 / 400 /
800 requests over HTTP c8 peaked at 276 / 557 / 1,509 MB. In time windows it runs away: summarizing a
window costs those copies per request, the load goes on meanwhile, so the next window holds more requests
and takes longer to summarize; once rate x copy cost nears 1 (~1,000 requests/s here on a quiet machine)
the windows grow without bound — the 23 GB that took the machine down — and on a loaded machine 100 ms
windows still ran past 3 GB at 70-100 requests/s. Shorter windows do not help. So a case with a large
payload (Case.payload_bytes) is measured in one count-bounded run (--request-count) of as many requests
as fit --pa-memory-mb at PA_COPIES x the payload each, and its requests/s is the slope of the server's own
inference count (its statistics, sampled every 100 ms) past the warm-up: perf_analyzer's own figure for
such a run divides the count by a window ended on a whole-second tick (see below). And every
perf_analyzer runs under a hard cap: RLIMIT_AS (set in the child before exec) at that budget plus what
perf_analyzer reserves for itself, and its RSS sampled every 20 ms and the process killed above the
budget. A stopped point is tried again with a quarter of the requests; then it
fails alone, with the reason in the summary (no verdict then), and the run goes on.

Why time windows and not a request count: with --request-count, perf_analyzer 2.60 notices the end of the
run only on a whole-second tick, so its requests/s is the count divided by a rounded-up number of seconds
(2,000/s, 1,333/s, 1,000/s, ...), which made a 2,087/s server and a 1,250/s one look alike.

Usage: .venv/bin/python bench/vs-triton/vs_triton.py [--rounds 2] [--window-ms 2000] [--cases a,b]
           [--servers nereid,triton] [--baseline OTHER_CHECKOUT] [--out DIR] [--pa-memory-mb 3000]
           [--port-base N (the servers' ports from N up instead of free ephemeral ones)]
           [--warmup-seconds 10]

Before the first point each server serves every model and protocol of the run (but the large-payload
ones) for --warmup-seconds (0: none): Nereid's JavaScript reaches V8's optimised code only after several
thousand requests, and the first point of each protocol would otherwise measure that, not the server.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import math
import os
import re
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MODELS = Path(__file__).resolve().parent / "models"
TRITON_VENV = Path(os.environ.get("NEREID_TRITON_VENV", ROOT / ".venv-triton"))
TRITON = TRITON_VENV / "bin" / "tritonserver"
PERF_ANALYZER = ROOT / ".venv" / "bin" / "perf_analyzer"
CLK_TCK = os.sysconf("SC_CLK_TCK")
CPUS = os.cpu_count() or 1


@dataclass(frozen=True)
class Case:
    name: str
    model: str
    protocol: str
    concurrency: int
    # extra perf_analyzer arguments (streaming, input data)
    extra: tuple[str, ...] = ()
    # targets: Nereid/Triton requests/s at least this, p99 at most Triton's
    p99_target: bool = False
    # bytes of one request's inputs plus its response's outputs, when large: perf_analyzer keeps a copy of
    # both for every request of a run, so these cases get windows short enough to fit --pa-memory-mb
    payload_bytes: int = 0


# vt_identity_large: 153,600 FP32 in and the same out
LARGE = 2 * 153_600 * 4

CASES: list[Case] = [
    Case("add_sub http c1", "vt_add_sub", "http", 1, p99_target=True),
    Case("add_sub http c4", "vt_add_sub", "http", 4, p99_target=True),
    Case("add_sub http c16", "vt_add_sub", "http", 16, p99_target=True),
    Case("add_sub grpc c1", "vt_add_sub", "grpc", 1, p99_target=True),
    Case("add_sub grpc c4", "vt_add_sub", "grpc", 4, p99_target=True),
    Case("add_sub grpc c16", "vt_add_sub", "grpc", 16, p99_target=True),
    Case("identity 600KB http c1", "vt_identity_large", "http", 1, payload_bytes=LARGE),
    Case("identity 600KB http c8", "vt_identity_large", "http", 8, payload_bytes=LARGE),
    Case("identity 600KB grpc c1", "vt_identity_large", "grpc", 1, payload_bytes=LARGE),
    Case("identity 600KB grpc c8", "vt_identity_large", "grpc", 8, payload_bytes=LARGE),
    Case("add_sub dynamic batching grpc c16", "vt_add_sub_batched", "grpc", 16),
    Case("add_sub dynamic batching http c16", "vt_add_sub_batched", "http", 16),
    Case("decoupled 16 responses grpc-stream c4", "vt_stream16", "grpc", 4, ("--streaming",)),
    Case("BLS add_sub http c1", "vt_bls", "http", 1),
    Case("BLS add_sub grpc c4", "vt_bls", "grpc", 4),
]

COLD_START_MODELS = 20


# --- processes ---------------------------------------------------------------------------------------------


def proc_cpu_seconds(pid: int) -> float:
    """utime + stime of one process (all its threads), in seconds; 0 if it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = text[text.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tasks:
        with contextlib.suppress(OSError):
            out += [int(x) for x in Path(f"/proc/{pid}/task/{tid}/children").read_text().split()]
    return out


def machine_busy_seconds() -> float:
    """CPU time all cores spent on anything but idle and iowait since boot."""
    parts = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    values = [int(x) for x in parts]
    idle = values[3] + values[4]
    # guest time is already counted in user/nice
    return (sum(values[:8]) - idle) / CLK_TCK


def loadavg() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


# --port-base: the next port to try from (0: ephemeral ports the kernel picks)
PORTS: list[int] = [0]


def free_port() -> int:
    """A port nothing listens on: the next free one from --port-base, or one the kernel picks."""
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", PORTS[0]))
            except OSError:
                PORTS[0] += 1
                continue
            port: int = s.getsockname()[1]
            if PORTS[0]:
                PORTS[0] += 1
            return port


@dataclass
class Server:
    name: str
    process: subprocess.Popen[bytes]
    log: Path
    http_port: int = 0
    grpc_port: int = 0

    @property
    def pid(self) -> int:
        return self.process.pid

    def url(self, protocol: str) -> str:
        return f"127.0.0.1:{self.http_port if protocol == 'http' else self.grpc_port}"

    def stubs(self) -> list[int]:
        return children(self.pid)

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.pid, signal.SIGKILL)
                self.process.wait()

    def get(self, path: str) -> tuple[int, bytes]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.http_port}{path}", timeout=10) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()
        except OSError:
            return 0, b""

    def batches(self, model: str) -> dict[int, int]:
        """The model's executions per batch size (batch_stats' compute_infer counts), summed over versions."""
        status, body = self.get(f"/v2/models/{model}/stats")
        if status != 200:
            raise RuntimeError(f"{self.name}: statistics of {model}: HTTP {status} {body[:200]!r}")
        out: dict[int, int] = {}
        for s in json.loads(body)["model_stats"]:
            for b in s.get("batch_stats", []):
                size = int(b["batch_size"])
                out[size] = out.get(size, 0) + int(b["compute_infer"]["count"])
        return out

    def statistics(self, model: str) -> dict[str, int]:
        """The model's success count and its success / queue / compute_* nanoseconds, summed over versions."""
        status, body = self.get(f"/v2/models/{model}/stats")
        if status != 200:
            raise RuntimeError(f"{self.name}: statistics of {model}: HTTP {status} {body[:200]!r}")
        out = {
            "count": 0,
            "success": 0,
            "queue": 0,
            "compute_input": 0,
            "compute_infer": 0,
            "compute_output": 0,
        }
        for s in json.loads(body)["model_stats"]:
            inference = s["inference_stats"]
            out["count"] += int(inference["success"]["count"])
            for key in ("success", "queue", "compute_input", "compute_infer", "compute_output"):
                out[key] += int(inference[key]["ns"])
        return out


def spawn(name: str, args: list[str], log: Path) -> Server:
    with log.open("wb") as f:
        process = subprocess.Popen(
            args,
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=f,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return Server(name, process, log)


# --baseline: another built Nereid checkout, measured as server "baseline" (before/after a change).
BASELINE: list[Path] = []


def nereid_args(repository: Path, http: int, grpc: int, root: Path = ROOT) -> list[str]:
    return [
        str(root / "bin" / "nereid.js"),
        f"--model-repository={repository}",
        "--http-address=127.0.0.1",
        f"--http-port={http}",
        "--grpc-address=127.0.0.1",
        f"--grpc-port={grpc}",
        "--allow-metrics=false",
        # the stubs on Triton's interpreter and numpy, so that only the servers differ
        f"--backend-config=python,python-executable={TRITON_VENV / 'bin' / 'python'}",
    ]


def triton_args(repository: Path, http: int, grpc: int) -> list[str]:
    return [
        str(TRITON),
        f"--model-repository={repository}",
        "--http-address=127.0.0.1",
        f"--http-port={http}",
        "--grpc-address=127.0.0.1",
        f"--grpc-port={grpc}",
        "--allow-metrics=false",
        "--exit-timeout-secs=5",
        f"--backend-config=python,shm-region-prefix-name=nereid_vs_{os.getpid()}_",
    ]


def start(
    name: str, repository: Path, log_dir: Path, timeout: float = 300, extra: tuple[str, ...] = ()
) -> tuple[Server, float]:
    """Starts a server (with `extra` flags) and waits until /v2/health/ready; the server and the seconds."""
    for attempt in range(3):
        http, grpc = free_port(), free_port()
        if name == "nereid":
            command = nereid_args(repository, http, grpc)
        elif name == "baseline":
            command = nereid_args(repository, http, grpc, BASELINE[0])
        else:
            command = triton_args(repository, http, grpc)
        command += extra
        log = log_dir / f"{name}-{int(time.time() * 1000)}-{attempt}.log"
        t0 = time.monotonic()
        server = spawn(name, command, log)
        server.http_port, server.grpc_port = http, grpc
        while time.monotonic() - t0 < timeout:
            if server.process.poll() is not None:
                break
            if server.get("/v2/health/ready")[0] == 200:
                return server, time.monotonic() - t0
            time.sleep(0.02)
        server.stop()
        text = log.read_text(errors="replace")
        if not re.search(r"address already in use|failed to start", text, re.IGNORECASE):
            raise RuntimeError(f"{name} did not become ready:\n{text[-3000:]}")
    raise RuntimeError(f"{name}: no free ports after 3 attempts")


# --- one point ---------------------------------------------------------------------------------------------


@dataclass
class Point:
    server: str
    rate: float
    p99_us: float
    host_us: float
    stub_us: float
    others_share: float
    load_before: float
    load_after: float
    requests: int
    server_stats_us: dict[str, float]
    # executions per batch size during the point (batch_stats deltas)
    batches: dict[int, int] = field(default_factory=dict)
    # perf_analyzer's windows (ms), or the requests of its one count-bounded run, and its peak RSS (MB)
    window_ms: int = 0
    count: int = 0
    pa_rss_mb: int = 0


# What perf_analyzer holds per byte of a request's payload in a count-bounded run, with a margin (measured
# 1.1-2x: its copies of the inputs and outputs, the records copied again for the summary, malloc's
# leftovers; the most over HTTP at c1), what it reserves beyond its RSS (thread stacks and malloc arenas:
# ~1.2 GB of address space at 16 threads), and the fewest requests per concurrent request worth a point.
PA_COPIES = 3
PA_RESERVED_BYTES = 2 << 30
MIN_COUNT = 20
# how often a count-bounded run samples the server's inference count
SAMPLE_SECONDS = 0.1
# --pa-memory-mb, in bytes
PA_BUDGET: list[int] = [3000 << 20]


class PointFailed(RuntimeError):
    """One point could not be measured (perf_analyzer outgrew its memory cap); the run goes on."""


class OverBudget(PointFailed):
    """perf_analyzer was stopped at its memory cap (the point is tried again with shorter windows)."""


@dataclass
class PaRun:
    returncode: int
    peak_rss: int
    over_budget: bool


def vm_rss(pid: int) -> int:
    """Resident bytes of a process (0 if it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def run_capped(
    command: list[str], log: Path, timeout: float, sample: Callable[[], None] | None = None
) -> PaRun:
    """Runs perf_analyzer (stdout and stderr to `log`) in bounded memory: RLIMIT_AS at the budget plus
    PA_RESERVED_BYTES, set in the child before exec (an allocation past it fails, std::bad_alloc), and its
    RSS sampled every 20 ms, the process killed once above the budget. Its peak RSS comes from wait4.
    `sample` (if any) is called every SAMPLE_SECONDS meanwhile."""
    budget = PA_BUDGET[0]
    limit = budget + PA_RESERVED_BYTES

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    with log.open("wb") as f:
        process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=f, stderr=subprocess.STDOUT, preexec_fn=cap
        )
    deadline = time.monotonic() + timeout
    peak, over = 0, False
    next_sample = time.monotonic()
    try:
        while True:
            if sample is not None and time.monotonic() >= next_sample:
                sample()
                next_sample = time.monotonic() + SAMPLE_SECONDS
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                process.returncode = os.waitstatus_to_exitcode(status)
                return PaRun(process.returncode, max(peak, usage.ru_maxrss * 1024), over)
            rss = vm_rss(process.pid)
            peak = max(peak, rss)
            if rss > budget and not over:
                over = True
                process.kill()
            if time.monotonic() > deadline:
                process.kill()
                os.wait4(process.pid, 0)
                process.returncode = -signal.SIGKILL
                raise subprocess.TimeoutExpired(command, timeout)
            time.sleep(0.02)
    except BaseException:
        # an interrupted run (Ctrl-C, a failed sample) takes its perf_analyzer with it
        if process.returncode is None:
            process.kill()
            os.wait4(process.pid, 0)
        raise


def warmup_requests(case: Case) -> int:
    return max(50, 4 * case.concurrency)


def pa_command(server: Server, case: Case, out: Path) -> list[str]:
    return [
        str(PERF_ANALYZER),
        "-m",
        case.model,
        "-i",
        case.protocol,
        "-u",
        server.url(case.protocol),
        "--concurrency-range",
        str(case.concurrency),
        "-f",
        str(out),
        *case.extra,
    ]


def warm_up(server: Server, cases: list[Case], seconds: float, out: Path) -> None:
    """Serves each model and protocol of `cases` for `seconds` before anything is measured. Nereid's
    JavaScript is compiled by V8 as it runs: after a start its first ~8,000 vt_add_sub requests over one
    protocol run partly unoptimised, with V8's compiler threads busy beside them (bench/README.md, "What
    sets the concurrency-1 tail"), so the first case measured (HTTP c1) and the first of each other protocol
    would measure that warm-up, not the server. Both servers get the same. At 4 or more in flight (more
    requests in the time; the same code runs at concurrency 1). Large-payload cases are left out: their
    perf_analyzer is bounded by request count (its memory), not by time."""
    if seconds <= 0:
        return
    seen: set[tuple[str, str, tuple[str, ...]]] = set()
    for case in cases:
        key = (case.model, case.protocol, case.extra)
        if case.payload_bytes or key in seen:
            continue
        seen.add(key)
        warm = replace(case, concurrency=max(4, case.concurrency))
        slug = re.sub(r"[^a-z0-9]+", "-", case.name)
        csv_out = out / f"warmup-{slug}-{server.name}.csv"
        window = ["--measurement-interval", str(int(seconds * 1000)), "--stability-percentage", "999"]
        command = [*pa_command(server, warm, csv_out), *window, "--max-trials", "1"]
        try:
            run = run_capped(command, csv_out.with_suffix(".txt"), timeout=60 + 2 * seconds)
        except subprocess.TimeoutExpired:
            print(f"  warm-up of {case.name} [{server.name}] did not finish", file=sys.stderr)
            continue
        # (perf_analyzer exits 2 when one window is not "stable": the requests were served all the same)
        if run.over_budget:
            print(f"  warm-up of {case.name} [{server.name}] stopped at the memory cap", file=sys.stderr)


def fitted_count(case: Case) -> int:
    """Requests of a large-payload case's count-bounded run: as many as fit the memory budget at
    PA_COPIES x its payload each, warm-up included (0: not a large-payload case, measured in windows)."""
    if not case.payload_bytes:
        return 0
    count = PA_BUDGET[0] // (PA_COPIES * case.payload_bytes) - warmup_requests(case)
    if count < MIN_COUNT * case.concurrency:
        raise PointFailed(
            f"{MIN_COUNT * case.concurrency} requests of {case.payload_bytes:,} bytes do not fit "
            f"--pa-memory-mb {PA_BUDGET[0] >> 20} at {PA_COPIES}x each: raise it"
        )
    return count


def perf_analyzer(
    server: Server, case: Case, out: Path, window_ms: int, count: int
) -> tuple[float, float, int]:
    """One point, three windows of `window_ms`, or with `count` one run of that many requests: requests/s,
    p99 (µs) and perf_analyzer's peak RSS (bytes). A count-bounded run's requests/s is the slope of the
    server's own inference count, sampled every SAMPLE_SECONDS, between the end of the warm-up and the last
    sample before the run's final request (perf_analyzer's figure for such a run divides the count by a
    window it ends on a whole-second tick); too short a run for that falls back to concurrency / mean
    latency (Little's law for a closed loop)."""
    measurement = (
        ["--request-count", str(count)]
        if count
        else [
            # three windows whatever their spread: the noise rule below judges spread across points instead
            "--measurement-interval",
            str(window_ms),
            "--stability-percentage",
            "999",
            "--max-trials",
            "3",
        ]
    )
    command = [
        *pa_command(server, case, out),
        *measurement,
        "--warmup-request-count",
        str(warmup_requests(case)),
    ]
    log = out.with_suffix(".txt")
    timeout = 60 + (count / 5 if count else 6 * window_ms / 1000)
    samples: list[tuple[float, int]] = []

    def sample() -> None:
        samples.append((time.monotonic(), server.statistics(case.model)["count"]))

    # perf_analyzer now and then never returns after its last request (seen on a loaded machine, with its
    # connections already answered and closed by the server): give each run a bound and one more try.
    for attempt in range(2):
        try:
            samples.clear()
            run = run_capped(command, log, timeout=timeout, sample=sample if count else None)
            break
        except subprocess.TimeoutExpired:
            if attempt == 1:
                raise RuntimeError(f"perf_analyzer did not finish against {server.name}, twice") from None
            print(f"  perf_analyzer hung against {server.name}; running the point again", file=sys.stderr)
    text = log.read_text(errors="replace")
    if run.over_budget or "bad_alloc" in text:
        shape = f"{count} requests" if count else f"windows of {window_ms} ms"
        raise OverBudget(
            f"perf_analyzer outgrew its memory cap ({PA_BUDGET[0] >> 20} MB RSS, peak {run.peak_rss >> 20} "
            f"MB, {shape}) and was stopped: it keeps every request's inputs and outputs"
        )
    if run.returncode != 0:
        raise RuntimeError(f"perf_analyzer failed against {server.name} (exit {run.returncode}):\n{text}")
    with out.open(newline="") as f:
        row = next(csv.DictReader(f))
    rate = float(row["Inferences/Second"])
    if count:
        rate = sampled_rate(samples, warmup_requests(case), count) or littles_rate(case, text, server)
    return rate, float(row["p99 latency"]), run.peak_rss


def sampled_rate(samples: list[tuple[float, int]], warmup: int, count: int) -> float:
    """Requests/s from (time, server inference count) samples of a run of `warmup` then `count` requests:
    the slope between the first sample past the warm-up and the last one short of the end; 0 if those are
    under 0.3 s or 10 requests apart."""
    if not samples:
        return 0.0
    start = samples[0][1]
    steady = [(t, n) for t, n in samples if start + warmup <= n < start + warmup + count]
    if len(steady) < 2:
        return 0.0
    (t0, n0), (t1, n1) = steady[0], steady[-1]
    if t1 - t0 < 0.3 or n1 - n0 < 10:
        return 0.0
    return (n1 - n0) / (t1 - t0)


def littles_rate(case: Case, text: str, server: Server) -> float:
    mean = re.search(r"Avg latency: (\d+) usec", text)
    if mean is None or int(mean[1]) == 0:
        raise RuntimeError(f"no mean latency in perf_analyzer's output against {server.name}:\n{text}")
    return case.concurrency / int(mean[1]) * 1e6


def measure(server: Server, case: Case, out: Path, window_ms: int) -> Point:
    """One point; a count-bounded run stopped at the memory cap is measured again with a quarter of the
    requests, down to MIN_COUNT x concurrency, and then the point fails (PointFailed)."""
    count = fitted_count(case)
    while True:
        try:
            return measure_once(server, case, out, window_ms, count)
        except OverBudget as e:
            if not count or count // 4 < MIN_COUNT * case.concurrency:
                raise
            count //= 4
            print(f"  {case.name} [{server.name}]: {e}; again, {count} requests", file=sys.stderr)


def measure_once(server: Server, case: Case, out: Path, window_ms: int, pa_count: int) -> Point:
    stubs = server.stubs()
    load_before = loadavg()
    host0 = proc_cpu_seconds(server.pid)
    stub0 = {pid: proc_cpu_seconds(pid) for pid in stubs}
    busy0 = machine_busy_seconds()
    kids0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    stats0 = server.statistics(case.model)
    batches0 = server.batches(case.model)
    t0 = time.monotonic()
    rate, p99, pa_rss = perf_analyzer(server, case, out, window_ms, pa_count)
    wall = time.monotonic() - t0
    stats1 = server.statistics(case.model)
    batches1 = server.batches(case.model)
    delta = {k: stats1[k] - stats0[k] for k in stats1}
    count = delta["count"]
    kids1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    busy = machine_busy_seconds() - busy0
    host = proc_cpu_seconds(server.pid) - host0
    stub = sum(proc_cpu_seconds(pid) - stub0[pid] for pid in stubs)
    client = (kids1.ru_utime + kids1.ru_stime) - (kids0.ru_utime + kids0.ru_stime)
    others = max(0.0, busy - host - stub - client)
    n = max(count, 1)
    return Point(
        server.name,
        rate,
        p99,
        host / n * 1e6,
        stub / n * 1e6,
        others / (wall * CPUS),
        load_before,
        loadavg(),
        count,
        # The server's own statistics per request (µs): queue + compute_* must fit in success.
        {k: delta[k] / max(count, 1) / 1000 for k in delta if k != "count"},
        {k: v - batches0.get(k, 0) for k, v in sorted(batches1.items()) if v > batches0.get(k, 0)},
        0 if pa_count else window_ms,
        pa_count,
        pa_rss >> 20,
    )


# --- the run -----------------------------------------------------------------------------------------------


@dataclass
class CaseResult:
    case: Case
    points: dict[str, list[Point]] = field(default_factory=dict)


def fmt(x: float, digits: int = 0) -> str:
    return f"{x:,.{digits}f}"


def cold_start(log_dir: Path, rounds: int, servers: list[str]) -> dict[str, list[float]]:
    """Seconds from process start to ready with 20 copies of vt_add_sub."""
    repo = Path(tempfile.mkdtemp(prefix="vs-triton-cold-"))
    try:
        for i in range(COLD_START_MODELS):
            name = f"cold_{i:02d}"
            (repo / name / "1").mkdir(parents=True)
            config = (MODELS / "vt_add_sub" / "config.pbtxt").read_text()
            config = config.replace('name: "vt_add_sub"', f'name: "{name}"')
            (repo / name / "config.pbtxt").write_text(config)
            shutil.copy(MODELS / "vt_add_sub" / "1" / "vt_add_sub.py", repo / name / "1" / "vt_add_sub.py")
        times: dict[str, list[float]] = {s: [] for s in servers}
        for r in range(rounds):
            order = servers if r % 2 == 0 else list(reversed(servers))
            for name in order:
                server, seconds = start(name, repo, log_dir)
                server.stop()
                times[name].append(seconds)
                print(f"  cold start {name}: {seconds:.2f} s", file=sys.stderr)
        return times
    finally:
        shutil.rmtree(repo, ignore_errors=True)


def post(server: Server, path: str) -> tuple[int, bytes]:
    request = urllib.request.Request(f"http://127.0.0.1:{server.http_port}{path}", data=b"{}", method="POST")
    try:
        with urllib.request.urlopen(request, timeout=120) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def model_state(server: Server, model: str) -> str:
    """The model's state in the repository index ("" when the index does not list it)."""
    status, body = post(server, "/v2/repository/index")
    if status != 200:
        raise RuntimeError(f"{server.name}: repository index: HTTP {status} {body[:200]!r}")
    states = [str(m.get("state", "")) for m in json.loads(body) if m.get("name") == model]
    return states[0] if states else ""


def explicit_load(log_dir: Path, rounds: int, servers: list[str]) -> dict[str, list[float]]:
    """Seconds one explicit load of vt_add_sub takes (POST .../load until it answers; both servers answer
    once the model is ready), on a server started with --model-control-mode=explicit and no model loaded;
    unloaded again (until the index says UNAVAILABLE) before the next load. Rounds alternate the servers.
    """
    repo = Path(tempfile.mkdtemp(prefix="vs-triton-load-"))
    shutil.copytree(MODELS / "vt_add_sub", repo / "vt_add_sub")
    running: dict[str, Server] = {}
    times: dict[str, list[float]] = {s: [] for s in servers}
    try:
        for name in servers:
            running[name], _ = start(name, repo, log_dir, extra=("--model-control-mode=explicit",))
        for r in range(rounds * 3):
            order = servers if r % 2 == 0 else list(reversed(servers))
            for name in order:
                server = running[name]
                t0 = time.monotonic()
                status, body = post(server, "/v2/repository/models/vt_add_sub/load")
                seconds = time.monotonic() - t0
                if status != 200:
                    raise RuntimeError(f"{name}: load: HTTP {status} {body[:300]!r}")
                times[name].append(seconds)
                print(f"  explicit load [{name}]: {seconds * 1000:.0f} ms", file=sys.stderr)
                status, body = post(server, "/v2/repository/models/vt_add_sub/unload")
                if status != 200:
                    raise RuntimeError(f"{name}: unload: HTTP {status} {body[:300]!r}")
                deadline = time.monotonic() + 60
                while model_state(server, "vt_add_sub") not in ("UNAVAILABLE", ""):
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"{name}: vt_add_sub still unloading after 60 s")
                    time.sleep(0.05)
        return times
    finally:
        for s in running.values():
            s.stop()
        shutil.rmtree(repo, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=2, help="measurements per server and case (A/B/B/A...)")
    parser.add_argument("--window-ms", type=int, default=2000, help="perf_analyzer window (3 per point)")
    parser.add_argument("--cases", default="", help="comma-separated substrings of case names to run")
    parser.add_argument("--servers", default="nereid,triton")
    parser.add_argument("--noise-limit", type=float, default=0.25)
    parser.add_argument("--spread-limit", type=float, default=0.25)
    parser.add_argument(
        "--warmup-seconds",
        type=float,
        default=10,
        help="each server serves every model and protocol this long before the first point (0: none)",
    )
    parser.add_argument("--no-cold-start", action="store_true")
    parser.add_argument("--no-explicit-load", action="store_true")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument(
        "--baseline",
        type=Path,
        default=None,
        help="another built Nereid checkout, measured too as server 'baseline' (Nereid before a change)",
    )
    parser.add_argument(
        "--pa-memory-mb",
        type=int,
        default=3000,
        help="the most one perf_analyzer run may hold (RSS): large-payload windows are fitted to it, and a "
        "run above it is stopped and its point fails",
    )
    parser.add_argument("--port-base", type=int, default=0, help="servers' ports from here up (0: ephemeral)")
    args = parser.parse_args()
    PA_BUDGET[0] = args.pa_memory_mb << 20
    PORTS[0] = args.port_base

    servers = [s for s in args.servers.split(",") if s]
    if args.baseline is not None:
        BASELINE.append(args.baseline.resolve())
        servers.append("baseline")
    if "triton" in servers and not TRITON.exists():
        print("vs-triton: Triton is not installed here (run scripts/setup-triton.sh)", file=sys.stderr)
        return 2
    wanted = [c for c in args.cases.split(",") if c]
    cases = [c for c in CASES if not wanted or any(w in c.name for w in wanted)]
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    out = args.out or ROOT / "bench" / "results" / f"vs-triton-{stamp}"
    out.mkdir(parents=True, exist_ok=True)
    repo = Path(tempfile.mkdtemp(prefix="vs-triton-repo-"))
    shutil.copytree(MODELS, repo / "models")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    meta: dict[str, object] = {"commit": commit.stdout.strip(), "cpus": CPUS, "load_start": loadavg()}
    running: dict[str, Server] = {}
    results: list[CaseResult] = []
    failures: list[str] = []
    try:
        for name in servers:
            running[name], seconds = start(name, repo / "models", out)
            print(f"vs-triton: {name} ready in {seconds:.1f} s", file=sys.stderr)
        for name in servers:
            warm_up(running[name], cases, args.warmup_seconds, out)
        for case in cases:
            result = CaseResult(case, {s: [] for s in servers})
            for r in range(args.rounds):
                order = servers if r % 2 == 0 else list(reversed(servers))
                for name in order:
                    slug = re.sub(r"[^a-z0-9]+", "-", case.name)
                    try:
                        p = measure(running[name], case, out / f"{slug}-{name}-{r}.csv", args.window_ms)
                    except PointFailed as e:
                        failures.append(f"{case.name} [{name}] round {r + 1}: {e}")
                        print(f"  {case.name} [{name}] failed: {e}", file=sys.stderr)
                        continue
                    result.points[name].append(p)
                    print(
                        f"  {case.name} [{name}] {fmt(p.rate)} req/s, p99 {fmt(p.p99_us)} µs, CPU/req host "
                        f"{fmt(p.host_us)} µs + stub {fmt(p.stub_us)} µs, others {p.others_share:.0%}, "
                        f"load {p.load_before:.1f}, perf_analyzer {p.pa_rss_mb:,} MB RSS "
                        f"({f'{p.count} requests' if p.count else f'windows of {p.window_ms} ms'})"
                        + (f", average batch {average_batch(p.batches):.2f}" if p.batches else ""),
                        file=sys.stderr,
                    )
            results.append(result)
    finally:
        for s in running.values():
            s.stop()
        shutil.rmtree(repo, ignore_errors=True)
    cold = {} if args.no_cold_start else cold_start(out, args.rounds, servers)
    loads = {} if args.no_explicit_load else explicit_load(out, args.rounds, servers)
    meta["load_end"] = loadavg()
    meta["failures"] = failures
    report = summarize(results, cold, loads, servers, args.noise_limit, args.spread_limit, meta)
    (out / "summary.md").write_text(report)
    (out / "points.json").write_text(
        json.dumps(
            {
                "meta": meta,
                "cases": [
                    {"case": r.case.name, "points": {k: [p.__dict__ for p in v] for k, v in r.points.items()}}
                    for r in results
                ],
                "cold_start": cold,
                "explicit_load": loads,
            },
            indent=1,
        )
    )
    print(report)
    print(f"vs-triton: results in {out}", file=sys.stderr)
    return 0


def average_batch(hist: dict[int, int]) -> float:
    return sum(size * n for size, n in hist.items()) / max(sum(hist.values()), 1)


def merged_batches(points: list[Point]) -> dict[int, int]:
    out: dict[int, int] = {}
    for p in points:
        for size, n in p.batches.items():
            out[size] = out.get(size, 0) + n
    return out


def batch_histograms(results: list[CaseResult], servers: list[str]) -> list[str]:
    """Per case that batched (some execution above 1), the executions per batch size of every server side
    by side, summed over its points (the measured windows only: statistics before and after each point),
    with the share of requests each size carried and the average batch."""
    lines: list[str] = []
    for r in results:
        hist = {name: merged_batches(r.points.get(name, [])) for name in servers}
        if not any(size > 1 for h in hist.values() for size in h):
            continue
        sizes = sorted({size for h in hist.values() for size in h})
        names = [n for n in servers if hist[n]]
        rows = {n: sum(size * c for size, c in hist[n].items()) for n in names}
        lines += [
            "",
            f"Batch sizes formed, {r.case.name} (executions, share of requests; over the measured windows):",
            "",
            "| batch size | " + " | ".join(names) + " |",
            "|---:|" + "---:|" * len(names),
        ]
        for size in sizes:
            cells = []
            for n in names:
                c = hist[n].get(size, 0)
                cells.append(f"{c:,} ({size * c / max(rows[n], 1):.0%})" if c else "-")
            lines.append(f"| {size} | " + " | ".join(cells) + " |")
        avg = [f"{average_batch(hist[n]):.2f}" for n in names]
        lines.append("| average | " + " | ".join(avg) + " |")
    return lines


def summarize(
    results: list[CaseResult],
    cold: dict[str, list[float]],
    loads: dict[str, list[float]],
    servers: list[str],
    noise_limit: float,
    spread_limit: float,
    meta: dict[str, object],
) -> str:
    lines = [
        f"Commit {meta['commit']}, {CPUS} CPUs, load average {meta['load_start']} at the start and "
        f"{meta.get('load_end')} at the end.",
        "",
    ]
    both = "nereid" in servers and "triton" in servers
    head = "| case | Nereid req/s | Triton req/s | Nereid/Triton | p99 µs N / T | CPU µs/req host N / T |"
    head += " CPU µs/req stub N / T | others' CPU |"
    lines += [head, "|---|---:|---:|---:|---:|---:|---:|---:|"]
    noisy: list[str] = []
    misses: list[str] = []
    for r in results:
        n, t = r.points.get("nereid", []), r.points.get("triton", [])

        def rates(ps: list[Point]) -> str:
            return " / ".join(fmt(p.rate) for p in ps) or "-"

        def med(ps: list[Point], attr: str) -> float:
            return statistics.median(getattr(p, attr) for p in ps) if ps else math.nan

        ratio = med(n, "rate") / med(t, "rate") if n and t else math.nan
        others = max((p.others_share for p in n + t), default=0.0)
        lines.append(
            f"| {r.case.name} | {rates(n)} | {rates(t)} | {ratio:.2f} | {fmt(med(n, 'p99_us'))} / "
            f"{fmt(med(t, 'p99_us'))} | {fmt(med(n, 'host_us'))} / {fmt(med(t, 'host_us'))} | "
            f"{fmt(med(n, 'stub_us'))} / {fmt(med(t, 'stub_us'))} | {others:.0%} |"
        )
        if others > noise_limit:
            noisy.append(f"{r.case.name}: other processes used up to {others:.0%} of the machine")
        for ps in (n, t):
            if len(ps) >= 2:
                lo, hi = min(p.rate for p in ps), max(p.rate for p in ps)
                if hi > lo * (1 + spread_limit):
                    noisy.append(f"{r.case.name} [{ps[0].server}]: runs differ {hi / lo - 1:.0%}")
        if both:
            if not ratio >= 1.0:
                misses.append(f"{r.case.name}: Nereid/Triton {ratio:.2f} < 1.0")
            if r.case.p99_target and med(n, "p99_us") > med(t, "p99_us"):
                misses.append(f"{r.case.name}: p99 {fmt(med(n, 'p99_us'))} > {fmt(med(t, 'p99_us'))} µs")
            if r.case.model == "vt_add_sub" and med(n, "host_us") > med(t, "host_us"):
                misses.append(
                    f"{r.case.name}: host CPU {fmt(med(n, 'host_us'))} > {fmt(med(t, 'host_us'))} µs/request"
                )
    if cold:
        cn, ct = cold.get("nereid", []), cold.get("triton", [])
        lines += [
            "",
            f"Cold start, {COLD_START_MODELS} Python models, process start to ready (s): Nereid "
            + " / ".join(f"{x:.2f}" for x in cn)
            + ", Triton "
            + " / ".join(f"{x:.2f}" for x in ct),
        ]
        if cn and ct and statistics.median(cn) > statistics.median(ct):
            misses.append("cold start slower than Triton's")
    if loads:
        ln, lt = loads.get("nereid", []), loads.get("triton", [])
        lines += [
            "",
            "Explicit load of one Python model (vt_add_sub), POST .../load until it answers (ms): Nereid "
            + " / ".join(f"{x * 1000:.0f}" for x in ln)
            + ", Triton "
            + " / ".join(f"{x * 1000:.0f}" for x in lt)
            + (
                f"; medians {statistics.median(ln) * 1000:.0f} vs {statistics.median(lt) * 1000:.0f} ms"
                if ln and lt
                else ""
            ),
        ]
        if ln and lt and statistics.median(ln) > statistics.median(lt):
            misses.append("explicit load slower than Triton's")
    if "baseline" in servers:
        lines += [
            "",
            "| case | baseline req/s | Nereid req/s | Nereid/baseline | CPU µs/req host B / N | "
            "CPU µs/req stub B / N |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for r in results:
            n, b = r.points.get("nereid", []), r.points.get("baseline", [])
            if not n or not b:
                continue

            def m(ps: list[Point], attr: str) -> float:
                return float(statistics.median(getattr(p, attr) for p in ps))

            lines.append(
                f"| {r.case.name} | {' / '.join(fmt(p.rate) for p in b)} | "
                f"{' / '.join(fmt(p.rate) for p in n)} | {m(n, 'rate') / m(b, 'rate'):.2f} | "
                f"{fmt(m(b, 'host_us'))} / {fmt(m(n, 'host_us'))} | "
                f"{fmt(m(b, 'stub_us'))} / {fmt(m(n, 'stub_us'))} |"
            )
    lines += [
        "",
        "Each server's own statistics per request, µs (median of its points): success = queue + "
        "compute_input + compute_infer + compute_output + what no phase covers (a phase sum over success "
        "is an accounting bug).",
        "",
        "| case | server | success | queue | compute_input | compute_infer | compute_output |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    keys = ("success", "queue", "compute_input", "compute_infer", "compute_output")
    for r in results:
        for name, ps in r.points.items():
            if not ps:
                continue
            v = {k: statistics.median(p.server_stats_us.get(k, math.nan) for p in ps) for k in keys}
            lines.append(f"| {r.case.name} | {name} | " + " | ".join(f"{v[k]:,.1f}" for k in keys) + " |")
            if (
                v["queue"] + v["compute_input"] + v["compute_infer"] + v["compute_output"]
                > v["success"] * 1.001
            ):
                misses.append(f"{r.case.name} [{name}]: its statistics' phases exceed its success time")
    lines += batch_histograms(results, servers)
    lines.append("")
    failures = meta.get("failures")
    if isinstance(failures, list) and failures:
        lines.append("**Points not measured** (so no verdict):")
        lines += [f"- {x}" for x in failures]
        lines.append("")
    if not both:
        lines.append("Only one server measured: no ratios, no verdict.")
    elif noisy or failures:
        if noisy:
            lines.append(
                "**No verdict: the machine was too noisy** (a point where other processes used more than "
                f"{noise_limit:.0%} of all CPUs, or two runs of one server more than {spread_limit:.0%} "
                "apart):"
            )
            lines += [f"- {x}" for x in noisy]
        else:
            lines.append("**No verdict: points are missing** (above).")
        if misses:
            lines.append("Targets not met in these numbers:")
            lines += [f"- {x}" for x in misses]
    elif misses:
        lines.append("**Verdict: targets not met**")
        lines += [f"- {x}" for x in misses]
    else:
        lines.append("**Verdict: every target met.**")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
