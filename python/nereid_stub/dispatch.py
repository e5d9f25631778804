"""Reading the control socket without a reader thread of its own: whichever thread needs a frame (the main
thread waiting for its next command, a BLS caller waiting for its result) becomes the reader, routes every
frame it reads to where it belongs, and wakes the others; when it has what it waited for it stops reading
and another waiter takes over. So a command is read by the thread that runs it — no hand-off between
threads on the hot path — while frames for others (cancellations, BLS results, freed shared memory) still
flow whenever anyone waits. Nobody reading while a model computes is fine: cancellation flags are polled
by is_cancelled(), freed space by the output allocator, and the host's death ends the process
(PR_SET_PDEATHSIG) even then.
"""

from __future__ import annotations

import os
import select
import sys
import threading
from collections.abc import Callable

from . import frames


class Dispatcher:
    def __init__(self, reader: frames.FrameReader, route: Callable[[frames.Frame], None]) -> None:
        self._reader = reader
        self._route = route
        self._cond = threading.Condition()
        self._reading = False
        # Threads asleep in self._cond.wait(): nobody to wake (the usual case) saves notify_all's cost.
        # The lock is taken with acquire()/release() rather than `with`, which costs two Python calls.
        self._sleepers = 0

    def _read_one(self, blocking: bool) -> bool:
        """Reads and routes one frame; False when none was ready (non-blocking). Called with the lock
        released and the reading role held."""
        if not blocking and not self._reader.has_buffered_frame():
            ready, _, _ = select.select([self._reader.fileno()], [], [], 0)
            if not ready:
                return False
        try:
            frame = self._reader.read()
        except Exception as e:
            print(f"nereid stub: control channel failed: {e}", file=sys.stderr, flush=True)
            frame = None
        if frame is None:
            # The host is gone (or spoke nonsense): nothing this process does can reach anyone any more.
            os._exit(1)
        self._cond.acquire()
        try:
            self._route(frame)
        finally:
            self._cond.release()
        return True

    def wait_for(self, ready: Callable[[], bool]) -> None:
        """Returns once `ready()` holds (checked under the dispatcher's lock), reading frames meanwhile."""
        cond = self._cond
        cond.acquire()
        try:
            while not ready():
                if self._reading:
                    self._sleepers += 1
                    try:
                        cond.wait()
                    finally:
                        self._sleepers -= 1
                    continue
                self._reading = True
                cond.release()
                try:
                    self._read_one(blocking=True)
                finally:
                    cond.acquire()
                    self._reading = False
                    if self._sleepers:
                        cond.notify_all()
        finally:
            cond.release()

    def poll(self) -> None:
        """Routes the frames already waiting on the socket, without blocking (if no one else is reading)."""
        with self._cond:
            if self._reading:
                return
            self._reading = True
        try:
            while self._read_one(blocking=False):
                pass
        finally:
            with self._cond:
                self._reading = False
                if self._sleepers:
                    self._cond.notify_all()

    @property
    def lock(self) -> threading.Condition:
        """Held while a frame is routed: state shared with waiters' predicates changes under it."""
        return self._cond
