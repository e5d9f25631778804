"""The Python stub's own work per request, in-process and without waiting on the socket: a Runtime is
built over one end of a socketpair, vt_add_sub is initialised, and for each request an EXECUTE frame (two
INT32 [16] inputs, inline) is written to the other end before the stub reads it (read) and handles it
(execute: builds the requests, runs the model, encodes and sends EXECUTE_DONE). The stub thread's CPU time
(time.thread_time_ns) is summed per phase. Every round also times a fixed calibration workload (json,
numpy, a list) in the same process and prints the stub's time divided by it ("norm"): on a shared, loaded
machine the absolute numbers drift with the load, the ratio much less, so compare checkouts by "norm",
alternating runs.

Usage: .venv-triton/bin/python bench/vs-triton/stub_work.py [--checkout DIR] [--batch 1] [--rounds 10000]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import struct
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--checkout", default=str(Path(__file__).resolve().parents[2]))
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=10000)
    args = parser.parse_args()
    root = Path(args.checkout)
    sys.path.insert(0, str(root / "python"))
    from nereid_stub import frames, messages  # the checkout is chosen at run time
    from nereid_stub.runtime import Runtime

    model = root / "bench" / "vs-triton" / "models" / "vt_add_sub"
    host, stub = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    rt: Any = Runtime(stub, None, None)
    # EXECUTE_DONE's header is binary in newer checkouts: keep it as bytes there (an older one's is JSON).
    try:
        host_reader = frames.FrameReader(host, frozenset({messages.EXECUTE_DONE}))
    except TypeError:
        host_reader = frames.FrameReader(host)
    args_: dict[str, str] = {
        "model_config": (model / "config.pbtxt").read_text(),
        "model_instance_kind": "CPU",
        "model_instance_name": "vt_add_sub_0",
        "model_instance_device_id": "0",
        "model_repository": str(model),
        "model_version": "1",
        "model_name": "vt_add_sub",
    }
    init = messages.Init(
        name="vt_add_sub_0",
        model_path=str(model / "1" / "vt_add_sub.py"),
        decoupled=False,
        shm_threshold=1 << 62,
        shm_initial=0,
        shm_growth=0,
        args=args_,
    )
    if not rt._initialize(init):
        raise SystemExit(f"initialize failed: {host_reader.read()}")
    host_reader.read()

    data = bytes(range(64))

    def frame_bytes(batch_id: int, rid0: int) -> bytes:
        requests: list[dict[str, Any]] = []
        for k in range(args.batch):
            inputs = [
                {
                    "name": n,
                    "datatype": "INT32",
                    "shape": [16],
                    "in_shm": False,
                    "offset": 64 * (2 * k + j),
                    "byte_size": 64,
                }
                for j, n in enumerate(("INPUT0", "INPUT1"))
            ]
            request: dict[str, Any] = {"rid": rid0 + k, "request_id": "", "correlation_id": "0", "flags": 0}
            request.update(correlation_is_string=False, parameters="{}", inputs=inputs)
            request["requested_outputs"] = ["OUTPUT0", "OUTPUT1"]
            requests.append(request)
        head = json.dumps({"batch": batch_id, "requests": requests}, separators=(",", ":")).encode()
        blob: bytes = data * (2 * args.batch)
        prefix = struct.pack("<IBI", 5 + len(head) + len(blob), messages.EXECUTE, len(head))
        return prefix + head + blob

    wire = [frame_bytes(i + 1, 1 + i * args.batch) for i in range(args.rounds)]
    calib_text = '{"a":[1,2,3],"b":"xyz","c":{"d":1.5,"e":[true,false,null]}}'
    calib_array = np.arange(16, dtype=np.int32)
    names = ("read", "execute")
    spent = dict.fromkeys(names, 0)
    calib = 0
    warm = min(1000, args.rounds // 10)
    clock = time.thread_time_ns
    for i, raw in enumerate(wire):
        host.sendall(raw)
        t0 = clock()
        rt._dispatch.wait_for(lambda: bool(rt._commands))
        frame = rt._commands.popleft()
        t1 = clock()
        rt._execute(frame)  # build the requests, run execute, encode and send EXECUTE_DONE
        t2 = clock()
        del frame
        host_reader.read()
        c0 = clock()
        for _ in range(3):
            json.loads(calib_text)
            _ = calib_array + calib_array
            _ = [str(n) for n in range(10)]
        c1 = clock()
        if i >= warm:
            for name, (a, b) in zip(names, ((t0, t1), (t1, t2)), strict=True):
                spent[name] += b - a
            calib += c1 - c0
    n = (args.rounds - warm) * args.batch
    total = sum(spent.values())
    phases = " ".join(f"{k} {v / n / 1000:.1f}" for k, v in spent.items())
    load = Path("/proc/loadavg").read_text().split()[0]
    print(
        f"{root}: batch {args.batch}: stub work {total / n / 1000:.1f} µs/request ({phases}); "
        f"norm {total / calib * (args.rounds - warm) / n:.3f} (load {load})"
    )
    os._exit(0)  # the runtime's janitor thread is not meant to be joined


if __name__ == "__main__":
    sys.exit(main())
