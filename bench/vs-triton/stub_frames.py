"""The stub's work to encode one vt_add_sub EXECUTE_DONE (two INT32 [16] outputs inline), as the JSON text
the stub used to assemble against the binary layout it writes now (messages.execute_done), alternated
round by round in one process so the machine's load falls on both alike. Prints the median and range of
µs per call (bench/README.md, "Python path: frame headers").

Usage: .venv-triton/bin/python bench/vs-triton/stub_frames.py [--rounds 21] [--calls 50000]
"""

from __future__ import annotations

import argparse
import sys
import time
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))

from nereid_stub import messages


def as_json() -> bytes:
    outs = [
        messages.tensor_json("OUTPUT0", "INT32", [16], False, 0, 64),
        messages.tensor_json("OUTPUT1", "INT32", [16], False, 64, 64),
    ]
    response = messages.response_json(1000001, True, outs, "{}", [])
    text = f'{{"batch":123456,"started":{time.monotonic_ns()},"finished":{time.monotonic_ns()}'
    return f'{text},"responses":[{response}]}}'.encode()


def as_binary() -> bytes:
    outs = [
        messages.tensor_bin("OUTPUT0", "INT32", [16], False, 0, 64),
        messages.tensor_bin("OUTPUT1", "INT32", [16], False, 64, 64),
    ]
    entry = messages.response_entry(1000001, True, outs, "{}", [])
    return messages.execute_done(123456, [entry], [], time.monotonic_ns(), time.monotonic_ns())


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--calls", type=int, default=50000)
    args = parser.parse_args()
    results: dict[str, list[float]] = {"JSON text": [], "binary": []}
    for _ in range(args.rounds):
        for name, f in (("JSON text", as_json), ("binary", as_binary)):
            results[name].append(timeit.timeit(f, number=args.calls) / args.calls * 1e6)
    for name, v in results.items():
        v.sort()
        print(f"stub EXECUTE_DONE, {name}: median {v[len(v) // 2]:.2f} µs ({v[0]:.2f}-{v[-1]:.2f})")
    print(f"header bytes: {len(as_json())} as JSON, {len(as_binary())} binary")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
