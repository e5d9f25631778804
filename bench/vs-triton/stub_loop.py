"""The Python stub alone, driven the way the host drives it: one EXECUTE at a time for vt_add_sub (two INT32
[16] inputs, inline in the frame), waiting for each EXECUTE_DONE. Prints the stub's CPU time per request
(utime + stime from /proc, so other load on the machine inflates it far less than a wall-clock rate) and
the round trip per request; with --profile, the stub runs under cProfile and the top functions are
printed. What this isolates: the stub's own per-request cost (decode, request objects, the model, encode,
the socket), without the Node host or any HTTP/gRPC. With --bls it drives vt_bls instead, answering each
BLS_REQUEST its execute sends with a BLS_RESPONSE of two INT32 [16] outputs, as the host would: the calling
stub's cost of one BLS call (the request objects, its BLS_REQUEST, the wait, reading the response).

Usage: .venv/bin/python bench/vs-triton/stub_loop.py [--requests 5000] [--batch 1] [--profile] [--bls]
           [--python .venv-triton/bin/python]
"""

from __future__ import annotations

import argparse
import os
import pstats
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))

from nereid_stub import frames, messages  # noqa: E402

CLK_TCK = os.sysconf("SC_CLK_TCK")
MODELS = Path(__file__).resolve().parent / "models"
PROFILED = """
import cProfile, os, runpy, sys
out, script = sys.argv[1], sys.argv[2]
sys.argv = sys.argv[2:]
profile = cProfile.Profile()
exit_now = os._exit
def _exit(code):
    profile.disable()
    profile.dump_stats(out)
    exit_now(code)
os._exit = _exit
profile.enable()
runpy.run_path(script, run_name="__main__")
"""


def cpu_seconds(pid: int) -> float:
    text = Path(f"/proc/{pid}/stat").read_text()
    fields = text[text.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--requests", type=int, default=5000)
    parser.add_argument("--batch", type=int, default=1, help="requests per EXECUTE frame")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--bls", action="store_true", help="drive vt_bls, answering its BLS calls")
    parser.add_argument("--python", default=str(ROOT / ".venv-triton" / "bin" / "python"))
    args = parser.parse_args()
    name = "vt_bls" if args.bls else "vt_add_sub"
    model = MODELS / name
    instance = f"{name}_0"

    host, stub_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    profile_out = Path(tempfile.mkdtemp()) / "stub.prof"
    script = str(ROOT / "python" / "nereid_python_stub.py")
    command = [args.python, script, instance]
    if args.profile:
        # The stub leaves with os._exit (no interpreter teardown), so the profile is written just before.
        command = [args.python, "-c", PROFILED, str(profile_out), script, instance]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "python")}
    # The stub finds its control socket at fd 3, as the host passes it: move ours out of the way first.
    while host.fileno() <= 3:
        old = host.detach()
        host = socket.socket(fileno=os.dup(old))
        os.close(old)
    os.dup2(stub_end.fileno(), 3, inheritable=True)
    stub = subprocess.Popen(command, pass_fds=(3,), env=env)
    os.close(3)
    stub_end.close()
    reader = frames.FrameReader(host, frozenset({messages.EXECUTE_DONE}))
    writer = frames.FrameWriter(host)

    def expect(type_: int) -> frames.Frame:
        while True:
            frame = reader.read()
            if frame is None:
                raise SystemExit("the stub closed its socket")
            if frame.type == type_:
                return frame

    expect(messages.HELLO)
    config = (model / "config.pbtxt").read_text()
    writer.send(
        messages.INIT,
        messages.Init(
            name=instance,
            model_path=str(model / "1" / f"{name}.py"),
            decoupled=False,
            shm_threshold=1 << 62,
            shm_initial=0,
            shm_growth=0,
            args={
                "model_config": config,
                "model_instance_kind": "CPU",
                "model_instance_name": instance,
                "model_instance_device_id": "0",
                "model_repository": str(model),
                "model_version": "1",
                "model_name": name,
            },
        ),
    )
    done = expect(messages.INIT_DONE)
    if done.header.get("error"):
        raise SystemExit(f"initialize failed: {done.header['error']}")
    data = bytes(range(64))
    outputs = [
        messages.StubTensor(
            name=f"OUTPUT{j}", datatype="INT32", shape=[16], in_shm=False, offset=64 * j, byte_size=64
        )
        for j in range(2)
    ]

    def answer_bls_calls() -> frames.Frame:
        """Answers the BLS calls the model makes until its EXECUTE_DONE comes."""
        while True:
            frame = reader.read()
            if frame is None:
                raise SystemExit("the stub closed its socket")
            if frame.type == messages.BLS_REQUEST:
                reply = messages.BlsResponse(call=frame.header["call"], final=True, outputs=outputs)
                writer.send(messages.BLS_RESPONSE, reply, [data, data])
            elif frame.type == messages.EXECUTE_DONE:
                return frame

    def execute(batch_id: int, rid0: int) -> None:
        requests = []
        blobs: list[bytes] = []
        for k in range(args.batch):
            tensors = [
                messages.StubTensor(
                    name=name,
                    datatype="INT32",
                    shape=[16],
                    in_shm=False,
                    offset=64 * (len(blobs) + j),
                    byte_size=64,
                )
                for j, name in enumerate(("INPUT0", "INPUT1"))
            ]
            blobs += [data, data]
            requests.append(
                messages.StubRequest(
                    rid=rid0 + k,
                    request_id="",
                    correlation_id="0",
                    correlation_is_string=False,
                    flags=0,
                    parameters="{}",
                    requested_outputs=["OUTPUT0", "OUTPUT1"],
                    inputs=tensors,
                    cancelled=False,
                )
            )
        writer.send(messages.EXECUTE, messages.Execute(batch=batch_id, requests=requests), blobs)
        # binary: u32 batch, f64, f64, u32 responses, ...
        reply = (answer_bls_calls() if args.bls else expect(messages.EXECUTE_DONE)).head
        assert struct.unpack_from("<IddI", reply)[3] == args.batch, reply

    for i in range(200):  # warm-up
        execute(i + 1, 1 + i * args.batch)
    rounds = max(1, args.requests // args.batch)
    cpu0, t0 = cpu_seconds(stub.pid), time.perf_counter()
    for i in range(rounds):
        execute(1000 + i, 100000 + i * args.batch)
    wall, cpu = time.perf_counter() - t0, cpu_seconds(stub.pid) - cpu0
    n = rounds * args.batch
    load = Path("/proc/loadavg").read_text().split()[0]
    print(
        f"stub alone ({name}), batch {args.batch}: {n / wall:,.0f} req/s, round trip "
        f"{wall / rounds * 1e6:,.1f} µs per EXECUTE, stub CPU {cpu / n * 1e6:,.1f} µs per request "
        f"(load {load})"
    )
    writer.send(messages.FINALIZE, messages.Finalize())
    expect(messages.FINALIZE_DONE)
    stub.wait(timeout=30)
    if args.profile and profile_out.exists():
        stats = pstats.Stats(str(profile_out))
        stats.sort_stats("tottime").print_stats(25)
    return 0


if __name__ == "__main__":
    sys.exit(main())
