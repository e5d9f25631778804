"""Entry point of a Nereid Python backend stub process: `python nereid_python_stub.py <name> [--shm]`.

The host passes the control socket as fd 3 and, with --shm, the two /dev/shm files as fds 4 (host -> stub)
and 5 (stub -> host). Running this file puts its folder first on sys.path, which is what makes
`import triton_python_backend_utils` work inside model.py. stdout and stderr are the model's own: the host
forwards them to its log, and nothing of the protocol travels there.
"""

from __future__ import annotations

import os
import signal
import socket
import sys

MIN_PYTHON = (3, 10)


def _die_with_parent() -> None:
    """Ask Linux to kill this process when the server dies, even if a model holds the GIL forever."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() == 1:
        os._exit(1)


def main() -> None:
    # Ctrl-C in a terminal sends SIGINT to the whole process group, stubs included. The server gets it
    # too and stops the stub itself, after finishing in-flight requests and calling the model's
    # finalize(); so, as Triton's stub does, this process leaves SIGINT to the server instead of dying
    # mid-request with a KeyboardInterrupt traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with_parent()
    sock = socket.socket(fileno=3)
    from nereid_stub import frames, messages

    writer = frames.FrameWriter(sock)
    if sys.version_info < MIN_PYTHON:
        writer.send(
            messages.FATAL,
            messages.fatal(
                f"the Python stub needs Python >= 3.10, but {sys.executable} is {sys.version.split()[0]}"
            ),
        )
        os._exit(3)
    try:
        import numpy  # noqa: F401
    except ImportError as e:
        writer.send(
            messages.FATAL,
            messages.fatal(
                f"the Python interpreter '{sys.executable}' cannot import numpy ({e}); "
                "install numpy into it (pip install numpy), or pick an interpreter that has it with "
                "the model config parameter EXECUTION_ENV_PATH or "
                "--backend-config=python,python-executable=<path>"
            ),
        )
        os._exit(3)
    from nereid_stub.runtime import Runtime

    shm = "--shm" in sys.argv[2:]
    Runtime(sock, 4 if shm else None, 5 if shm else None).run()
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip interpreter teardown: model threads (daemon or not) must not keep a finished stub alive.
    os._exit(0)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        # A SIGINT that came before main() could ignore it (during imports): exit without a traceback.
        os._exit(130)
