"""The fil backend served vs XGBoost called directly, on the same model and threads.

Trains an XGBoost binary classifier (200 trees of depth 6 on 32 features) in the fil backend's venv, then
measures, interleaved round by round so background load hits both alike:
- bare: the fil venv's python loading the model as the backend does (xgboost.Booster.load_model) and
  calling inplace_predict back to back on batches of 1 and 8 rows (xgboost's default threads, as served);
- served: `node bin/nereid.js` with the model (backend "fil", one instance, dynamic batching), driven by
  tritonclient HTTP with binary tensors, one request in flight, batch 1 and 8.
Prints rows/s for both, their ratio (goal at batch 8: served >= 0.9 of bare) and the served p50/p99.

Usage (after `npx nereid backends install fil` and `npx tsc -p tsconfig.json`):
    .venv/bin/python bench/fil.py [--seconds 5] [--rounds 3]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import tritonclient.http as httpclient

ROOT = Path(__file__).resolve().parent.parent
FIL_DIR = ROOT / "python" / "backends" / "fil"
FEATURES = 32

TRAIN = r"""
import sys
import numpy as np
import xgboost as xgb
rng = np.random.default_rng(3)
X = rng.normal(size=(5000, 32)).astype(np.float32)
y = (X[:, :8].sum(axis=1) + rng.normal(size=5000) > 0).astype(np.int32)
b = xgb.train({"objective": "binary:logistic", "max_depth": 6}, xgb.DMatrix(X, y), 200)
b.save_model(sys.argv[1])
"""

BARE = r"""
import json, sys, time
import numpy as np
import xgboost as xgb
path, batch, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
b = xgb.Booster()
b.load_model(path)
x = np.random.default_rng(1).normal(size=(batch, 32)).astype(np.float32)
for _ in range(200):
    b.inplace_predict(x)
n = 0
start = time.perf_counter()
while time.perf_counter() - start < seconds:
    b.inplace_predict(x)
    n += 1
print(json.dumps({"rows_per_s": n * batch / (time.perf_counter() - start)}))
"""

CONFIG = """
name: "fil_bench"
backend: "fil"
max_batch_size: 64
input [ { name: "input__0" data_type: TYPE_FP32 dims: [ 32 ] } ]
output [ { name: "output__0" data_type: TYPE_FP32 dims: [ 1 ] } ]
instance_group [ { kind: KIND_CPU count: 1 } ]
dynamic_batching { }
parameters [ { key: "model_type" value: { string_value: "xgboost_json" } } ]
"""


def fil_python() -> Path:
    key = hashlib.sha256((FIL_DIR / "requirements.txt").read_bytes()).hexdigest()[:12]
    root = Path(os.environ.get("NEREID_BACKEND_VENVS") or ROOT / ".cache" / "backends")
    venv = root / f"fil-{key}"
    if not (venv / ".nereid-installed").exists():
        sys.exit(f"the fil backend is not installed in {venv}: run 'npx nereid backends install fil'")
    return venv / "bin" / "python"


def bare(python: Path, model: Path, batch: int, seconds: float) -> float:
    out = subprocess.run(
        [str(python), "-c", BARE, str(model), str(batch), str(seconds)],
        check=True,
        capture_output=True,
        text=True,
    )
    rate: float = json.loads(out.stdout.strip().splitlines()[-1])["rows_per_s"]
    return rate


def served(url: str, batch: int, seconds: float) -> tuple[float, float, float]:
    x = np.random.default_rng(1).normal(size=(batch, FEATURES)).astype(np.float32)
    latencies: list[float] = []
    with httpclient.InferenceServerClient(url=url) as c:
        inp = httpclient.InferInput("input__0", [batch, FEATURES], "FP32")
        inp.set_data_from_numpy(x, binary_data=True)
        out = httpclient.InferRequestedOutput("output__0", binary_data=True)
        for _ in range(200):
            c.infer("fil_bench", [inp], outputs=[out])
        start = time.perf_counter()
        while time.perf_counter() - start < seconds:
            t = time.perf_counter()
            c.infer("fil_bench", [inp], outputs=[out])
            latencies.append(time.perf_counter() - t)
        elapsed = time.perf_counter() - start
    ms = np.array(latencies) * 1000
    return len(latencies) * batch / elapsed, float(np.percentile(ms, 50)), float(np.percentile(ms, 99))


def start_server(repo: Path, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    args = [
        "node",
        str(ROOT / "bin" / "nereid.js"),
        f"--model-repository={repo}",
        "--http-port=0",
        "--grpc-port=0",
        "--metrics-port=0",
        "--allow-grpc=false",
    ]
    with log.open("wb") as f:
        process = subprocess.Popen(args, cwd=ROOT, stdout=f, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        m = re.search(r"Started HTTPService at [^:]+:(\d+)", log.read_text(errors="replace"))
        if m:
            return process, f"localhost:{m.group(1)}"
        if process.poll() is not None:
            break
        time.sleep(0.2)
    process.kill()
    sys.exit(f"the server did not start:\n{log.read_text(errors='replace')[-3000:]}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=3)
    opts = parser.parse_args()
    python = fil_python()
    with tempfile.TemporaryDirectory(prefix="nereid-fil-bench-") as tmp:
        repo = Path(tmp) / "repo"
        (repo / "fil_bench" / "1").mkdir(parents=True)
        model = repo / "fil_bench" / "1" / "xgboost.json"
        subprocess.run([str(python), "-c", TRAIN, str(model)], check=True)
        (repo / "fil_bench" / "config.pbtxt").write_text(CONFIG)
        process, url = start_server(repo, Path(tmp) / "server.log")
        try:
            print(f"fil bench: 200 trees, depth 6, {FEATURES} features; {os.cpu_count()} cores")
            print("| batch | bare rows/s | served rows/s | served/bare | served p50 ms | served p99 ms |")
            print("| ----- | ----------- | ------------- | ----------- | ------------- | ------------- |")
            for batch in (1, 8):
                bares: list[float] = []
                serves: list[tuple[float, float, float]] = []
                for _ in range(opts.rounds):
                    bares.append(bare(python, model, batch, opts.seconds))
                    serves.append(served(url, batch, opts.seconds))
                b = max(bares)
                s = max(serves, key=lambda r: r[0])
                print(f"| {batch} | {b:.0f} | {s[0]:.0f} | {s[0] / b:.2f} | {s[1]:.3f} | {s[2]:.3f} |")
        finally:
            process.terminate()
            process.wait(timeout=60)


if __name__ == "__main__":
    main()
