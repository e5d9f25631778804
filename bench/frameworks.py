"""The framework backends under load (docs/backends.md#pytorch-and-openvino): prints ratios, asserts nothing.

    .venv/bin/python bench/frameworks.py [seconds-per-point [served,oversubscription [pytorch,openvino,...]]]

Needs the pytorch, openvino and tensorflow backends installed (`npx nereid backends install
pytorch|openvino|tensorflow`; a missing one is reported and skipped). On a
model each framework makes here (bench/frameworks_model.py: an MLP of 4 layers 1024 wide, FP32):

1. **served vs bare**, per backend, batch 1 and 8: rows/s of one instance served by Nereid (HTTP, binary
   tensors, 2 closed-loop clients) over rows/s of the same model called back to back in one Python process
   with the same thread count (the goal: >= 0.9 at batch 8), and the CPU each side spends per row: the
   server process and its stub (utime + stime of /proc/PID/stat, all threads) against the bare loop's own
   process, and the load client's (this process). On a shared machine CPU per row is steadier than rows/s:
   how much of the cores each side gets from the scheduler depends on the other work running. Each point
   is driven twice: by tritonclient in this process, then by Triton's perf_analyzer (C++, where
   .venv/bin/perf_analyzer runs), whose own CPU per request is a fraction of the Python client's;
2. **oversubscription** (pytorch): 4 instances with Nereid's default threads (cores / 4 each) against 4
   instances each given every core (INTRA_OP_THREAD_COUNT = INTER_OP_THREAD_COUNT = cores, the frameworks'
   and Triton's default), 8 clients at batch 8: throughput and p99 latency.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import tritonclient.http as httpclient

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "test" / "compat"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

from framework_backends import venv_python
from nereid_server import NereidServer, start_server
from nereid_stub.frameworks import usable_cores

WIDTH = 1024

MAKER = Path(__file__).resolve().parent / "frameworks_model.py"


def make_and_bare(
    kind: str, python: Path, folder: Path, seconds: float, threads: int, env: dict[str, str] | None = None
) -> dict[str, float]:
    """Makes the model in `folder` and times the framework on it directly. `env` defaults to what a stub
    adds (OMP_WAIT_POLICY=PASSIVE, nereid_stub.frameworks.limit_native_pools), so bare and served run the
    framework alike."""
    folder.mkdir(parents=True, exist_ok=True)
    # What limit_native_pools puts in a stub's environment for `threads` (frameworks_model.py sets the
    # framework's own intra/inter-op counts to `threads` as the backend does).
    pools = {v: str(threads) for v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
    done = subprocess.run(
        [str(python), str(MAKER), kind, str(folder), str(seconds), str(threads), str(WIDTH)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **pools, "OMP_WAIT_POLICY": "PASSIVE", **(env or {})},
    )
    return {k: float(v) for k, v in json.loads(done.stdout.strip().splitlines()[-1]).items()}


HEADS = {
    "pytorch": 'platform: "pytorch_libtorch"\n',
    "openvino": 'backend: "openvino"\n',
    "tensorflow": 'platform: "tensorflow_savedmodel"\n',
}
MODEL_FILES = {"pytorch": "model.pt", "openvino": "model.xml", "tensorflow": "model.savedmodel"}


def io_names(kind: str) -> tuple[str, str]:
    return ("INPUT__0", "OUTPUT__0") if kind == "pytorch" else ("x", "y")


def config(kind: str, name: str, instances: int, params: dict[str, str]) -> str:
    head = HEADS[kind]
    names = io_names(kind)
    text = head + f'name: "{name}"\nmax_batch_size: 8\n'
    text += f"instance_group {{ count: {instances} kind: KIND_CPU }}\n"
    text += f'input {{ name: "{names[0]}" data_type: TYPE_FP32 dims: [ {WIDTH} ] }}\n'
    text += f'output {{ name: "{names[1]}" data_type: TYPE_FP32 dims: [ {WIDTH} ] }}\n'
    for key, value in params.items():
        text += f'parameters {{ key: "{key}" value {{ string_value: "{value}" }} }}\n'
    return text


def drive(server: NereidServer, model: str, input_name: str, batch: int, clients: int, seconds: float) -> Any:
    """Closed-loop load: `clients` threads, each with its own connection, back to back for `seconds`."""
    latencies: list[float] = []
    lock = threading.Lock()
    stop = time.perf_counter() + seconds
    x = np.random.default_rng(1).standard_normal((batch, WIDTH)).astype(np.float32)

    def worker() -> None:
        client = httpclient.InferenceServerClient(url=server.http_url, network_timeout=300.0)
        tensor = httpclient.InferInput(input_name, [batch, WIDTH], "FP32")
        tensor.set_data_from_numpy(x)
        for _ in range(3):
            client.infer(model, [tensor])
        mine: list[float] = []
        while time.perf_counter() < stop:
            start = time.perf_counter()
            client.infer(model, [tensor])
            mine.append(time.perf_counter() - start)
        client.close()
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=worker) for _ in range(clients)]
    begin = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - begin
    return {
        "rows_per_s": len(latencies) * batch / elapsed,
        "p99_ms": float(np.percentile(latencies, 99) * 1000) if latencies else float("nan"),
    }


_TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (field 3 on), or None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2 :].split()


def stub_pids(server: NereidServer) -> list[int]:
    """The server's child processes (its Python stubs)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat(int(entry.name))
            if fields is not None and int(fields[1]) == server.process.pid:
                out.append(int(entry.name))
    return out


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process `pid`, all its threads (utime + stime of /proc/PID/stat)."""
    fields = _stat(pid)
    return (int(fields[11]) + int(fields[12])) / _TICK if fields is not None else 0.0


def own_cpu_seconds() -> float:
    """This process's CPU seconds (the load client's threads; the main thread only waits meanwhile)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def drive_measured(
    server: NereidServer, model: str, input_name: str, batch: int, clients: int, seconds: float
) -> dict[str, float]:
    """drive() plus the CPU each side spent per row served (µs): the server process, its stubs, the client."""
    stubs = stub_pids(server)
    pid = server.process.pid
    before = (cpu_seconds(pid), sum(map(cpu_seconds, stubs)), own_cpu_seconds())
    result = dict(drive(server, model, input_name, batch, clients, seconds))
    after = (cpu_seconds(pid), sum(map(cpu_seconds, stubs)), own_cpu_seconds())
    rows = max(1.0, result["rows_per_s"] * seconds)
    for key, b, a in zip(("server", "stub", "client"), before, after, strict=True):
        result[f"cpu_us_{key}"] = (a - b) / rows * 1e6
    result["rows"] = rows
    return result


PERF_ANALYZER = Path(__file__).resolve().parents[1] / ".venv" / "bin" / "perf_analyzer"


def children_cpu_seconds() -> float:
    """CPU seconds of this process's children that have been waited for (the perf_analyzer runs)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def drive_perf_analyzer(server: NereidServer, model: str, batch: int, clients: int, seconds: float) -> Any:
    """The same closed loop driven by Triton's perf_analyzer (C++, HTTP, `clients` concurrent requests, its
    random data) instead of tritonclient in this process: rows/s from its report, and the CPU per row served
    of the server, its stubs and perf_analyzer itself over the whole run (its warm-up trials included, with
    the rows the statistics counted meanwhile). None when perf_analyzer does not run here."""
    if not PERF_ANALYZER.exists():
        return None
    stubs = stub_pids(server)
    pid = server.process.pid
    count = phases(server, model)["requests"]
    before = (cpu_seconds(pid), sum(map(cpu_seconds, stubs)), children_cpu_seconds())
    window_ms = int(seconds * 1000 / 3)
    done = subprocess.run(
        [
            *(str(PERF_ANALYZER), "-m", model, "-i", "http", "-u", server.http_url, "-b", str(batch)),
            *("--concurrency-range", str(clients), "--measurement-interval", str(window_ms)),
            *("--stability-percentage", "999", "--max-trials", "3"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    after = (cpu_seconds(pid), sum(map(cpu_seconds, stubs)), children_cpu_seconds())
    rows = max(1.0, (phases(server, model)["requests"] - count) * batch)
    rate = [line.split()[1] for line in done.stdout.splitlines() if line.strip().startswith("Throughput:")]
    if done.returncode != 0 or not rate:
        print(f"perf_analyzer failed ({done.returncode}): {(done.stdout + done.stderr)[-400:]}")
        return None
    result: dict[str, float] = {"rows_per_s": float(rate[0])}
    for key, b, a in zip(("server", "stub", "client"), before, after, strict=True):
        result[f"cpu_us_{key}"] = (a - b) / rows * 1e6
    return result


def phases(server: NereidServer, model: str) -> dict[str, float]:
    """Cumulative per-phase time of the model from the statistics extension (ns), and its counts."""
    client = httpclient.InferenceServerClient(url=server.http_url)
    try:
        stats = client.get_inference_statistics(model_name=model)["model_stats"][0]
    finally:
        client.close()
    out = {
        k: float(stats["inference_stats"][k]["ns"])
        for k in ("queue", "compute_input", "compute_infer", "compute_output", "success")
    }
    out["requests"] = float(stats["inference_stats"]["success"]["count"])
    out["executions"] = float(stats["execution_count"])
    return out


def breakdown(before: dict[str, float], after: dict[str, float], rows_per_s_bare: float, batch: int) -> str:
    """Where a served request's time goes, per request (µs): the server's phases, against the bare call."""
    n = max(1.0, after["requests"] - before["requests"])
    per = {
        k: (after[k] - before[k]) / n / 1000
        for k in ("queue", "compute_input", "compute_infer", "compute_output", "success")
    }
    bare_us = batch / rows_per_s_bare * 1e6
    return (
        f"request {per['success']:.0f} µs = queue {per['queue']:.0f} + input {per['compute_input']:.0f} + "
        f"infer {per['compute_infer']:.0f} + output {per['compute_output']:.0f}; bare call {bare_us:.0f} µs"
    )


def row(label: str, batch: int, served: dict[str, float], bare_rows: float, bare_cpu: float) -> None:
    """One line of the served-vs-bare table."""
    rows = served["rows_per_s"]
    cpu = [served[f"cpu_us_{k}"] for k in ("server", "stub", "client")]
    print(
        f"| {label} | {batch} | {rows:.0f} | {bare_rows:.0f} | {rows / bare_rows:.2f} | "
        + " | ".join(f"{c:.0f}" for c in cpu)
        + f" | {bare_cpu:.0f} | {(cpu[0] + cpu[1]) / bare_cpu:.2f} |"
    )


def serve(folder: Path, log: Path) -> NereidServer:
    return start_server(
        [
            f"--model-repository={folder}",
            "--http-port=0",
            "--grpc-port=0",
            "--metrics-port=0",
            "--backend-config=python,stub-timeout-seconds=300",  # 8 stubs importing torch on 2 cores
        ],
        log,
        startup_timeout=300.0,
    )


def main() -> int:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 10.0
    parts = sys.argv[2].split(",") if len(sys.argv) > 2 else ["served", "oversubscription"]
    kinds = sys.argv[3].split(",") if len(sys.argv) > 3 else ["pytorch", "openvino", "tensorflow"]
    cores = usable_cores()
    root = Path(tempfile.mkdtemp(prefix="nereid-bench-frameworks-"))
    print(f"# framework backends, {cores} cores, {seconds:.0f} s per point, results in {root}\n")
    print(f"load average at the start: {' '.join(f'{v:.1f}' for v in os.getloadavg())}\n")
    print(
        "| backend | batch | served rows/s | bare rows/s | served / bare "
        "| CPU µs/row: server | stub | client | bare | (server + stub) / bare |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    notes: list[str] = []
    for spec in kinds if "served" in parts else ():
        # `pytorch@OMP_WAIT_POLICY=ACTIVE`: the server (and so its stubs) started with that environment, to
        # compare settings side by side in one run; the bare loop runs with it too.
        kind, _, setting = spec.partition("@")
        python = venv_python(kind)
        if python is None:
            print(f"| {kind} | - | not installed: npx nereid backends install {kind} | | | | | | | |")
            continue
        repo = root / spec.replace("@", "-").replace("=", "-")
        key, _, value = setting.partition("=")
        setting_env = {key: value} if setting else {}
        bare = make_and_bare(kind, python, repo / "mlp" / "1", seconds, cores, setting_env)
        (repo / "mlp" / "config.pbtxt").write_text(config(kind, "mlp", 1, {}), encoding="utf-8")
        assert (repo / "mlp" / "1" / MODEL_FILES[kind]).exists()
        saved = dict(os.environ)
        os.environ.update(setting_env)
        try:
            server = serve(repo, root / f"{repo.name}.log")
        finally:
            os.environ.clear()
            os.environ.update(saved)
        try:
            for batch in (1, 8):
                before = phases(server, "mlp")
                served = drive_measured(server, "mlp", io_names(kind)[0], batch, 2, seconds)
                alone = bare[str(batch)]
                notes.append(
                    f"{spec} batch {batch}: {breakdown(before, phases(server, 'mlp'), alone, batch)}"
                )
                cpu_bare = bare[f"cpu_us_{batch}"]
                row(spec, batch, served, alone, cpu_bare)
                analyzed = drive_perf_analyzer(server, "mlp", batch, 2, seconds)
                if analyzed is not None:
                    row(f"{spec}, perf_analyzer", batch, analyzed, alone, cpu_bare)
        finally:
            server.stop()
    for note in notes:
        print(f"- {note}")
    print(f"\nload average at the end: {' '.join(f'{v:.1f}' for v in os.getloadavg())}")
    python = venv_python("pytorch")
    if python is None or "oversubscription" not in parts:
        return 0
    print("\n| pytorch, 4 instances, 8 clients, batch 8 | rows/s | p99 ms |")
    print("| --- | --- | --- |")
    repo = root / "oversubscription"
    make_and_bare("pytorch", python, repo / "fair" / "1", 0.1, 1)
    (repo / "all" / "1").mkdir(parents=True)
    (repo / "all" / "1" / "model.pt").write_bytes((repo / "fair" / "1" / "model.pt").read_bytes())
    every = {"INTRA_OP_THREAD_COUNT": str(cores), "INTER_OP_THREAD_COUNT": str(cores)}
    (repo / "fair" / "config.pbtxt").write_text(config("pytorch", "fair", 4, {}), encoding="utf-8")
    (repo / "all" / "config.pbtxt").write_text(config("pytorch", "all", 4, every), encoding="utf-8")
    server = serve(repo, root / "oversubscription.log")
    try:
        results = {}
        for name, label in (
            ("fair", f"default: {max(1, cores // 4)} per instance"),
            ("all", f"{cores} each"),
        ):
            results[name] = drive(server, name, "INPUT__0", 8, 8, seconds)
            print(f"| {label} | {results[name]['rows_per_s']:.0f} | {results[name]['p99_ms']:.1f} |")
        fair, every_core = results["fair"], results["all"]
        print(
            f"\nfair / all-threads: throughput {fair['rows_per_s'] / every_core['rows_per_s']:.2f}, "
            f"p99 {fair['p99_ms'] / every_core['p99_ms']:.2f}"
        )
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
