"""The two /dev/shm files of a stub, both created and already unlinked by the host (so nothing is left
behind in /dev/shm whatever happens to either process) and inherited as file descriptors:

- fd 4, host -> stub: the host writes large input tensors (and large BLS results) into it; the stub maps it
  and hands models numpy views over it, so an input crosses the process boundary with exactly one copy
  (the host's write). The host grows the file; the stub re-maps when a tensor lies past its mapping.
- fd 5, stub -> host: the stub allocates space for large outputs (and BLS inputs) here and writes them with
  pwrite, one copy; the host reads them with pread and then returns the space with a FREE frame. pwrite
  rather than a mapping, so a full /dev/shm is an ENOSPC error (and the tensor goes inline over the socket
  instead) rather than a SIGBUS that kills the process.
"""

from __future__ import annotations

import bisect
import errno
import mmap
import os
import threading
from collections.abc import Callable

ALIGN = 64


def _align(n: int) -> int:
    return (n + ALIGN - 1) & ~(ALIGN - 1)


class InputArena:
    """Read side of the host's file: views into a shared mapping, re-mapped when the file grew."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._map: mmap.mmap | None = None
        self._size = 0
        self._lock = threading.Lock()

    def view(self, offset: int, size: int) -> memoryview:
        if offset < 0 or size < 0:
            raise ValueError("negative shared-memory offset or size")
        if size == 0:
            return memoryview(bytearray())
        with self._lock:
            if self._map is None or offset + size > self._size:
                file_size = os.fstat(self._fd).st_size
                if offset + size > file_size:
                    raise ValueError(
                        f"tensor at {offset}+{size} lies outside the shared-memory file of {file_size} bytes"
                    )
                # Views handed out earlier keep the old mapping alive until they are dropped.
                self._map = mmap.mmap(self._fd, file_size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
                self._size = file_size
            return memoryview(self._map)[offset : offset + size]


class OutputArena:
    """Write side: first-fit allocation over a file that grows in `growth`-byte steps."""

    def __init__(self, fd: int, initial: int, growth: int, reclaim: Callable[[], None] | None = None) -> None:
        self._fd = fd
        # Reads pending FREE frames (space the host has consumed) before the file is grown.
        self._reclaim = reclaim
        self._growth = max(growth, ALIGN)
        self._lock = threading.Lock()
        self._size = 0
        # Free ranges as two parallel sorted lists (starts, ends).
        self._starts: list[int] = []
        self._ends: list[int] = []
        self.disabled_reason: str | None = None
        if initial > 0:
            self._grow_to(_align(initial))

    def _grow_to(self, new_size: int) -> None:
        os.ftruncate(self._fd, new_size)
        self._release_locked(self._size, new_size - self._size)
        self._size = new_size

    def _release_locked(self, offset: int, size: int) -> None:
        if size <= 0:
            return
        start, end = offset, offset + size
        i = bisect.bisect_left(self._starts, start)
        # Merge with the previous and next free ranges when they touch.
        if i > 0 and self._ends[i - 1] == start:
            i -= 1
            start = self._starts[i]
            del self._starts[i]
            del self._ends[i]
        if i < len(self._starts) and self._starts[i] == end:
            end = self._ends[i]
            del self._starts[i]
            del self._ends[i]
        self._starts.insert(i, start)
        self._ends.insert(i, end)

    def _alloc_locked(self, size: int) -> int | None:
        for i, (s, e) in enumerate(zip(self._starts, self._ends, strict=True)):
            if e - s >= size:
                if e - s == size:
                    del self._starts[i]
                    del self._ends[i]
                else:
                    self._starts[i] = s + size
                return s
        return None

    def release(self, offset: int, size: int) -> None:
        with self._lock:
            self._release_locked(offset, _align(size))

    def write(self, data: memoryview) -> int | None:
        """Copies `data` into the file; its offset, or None when /dev/shm cannot take it (then the caller
        sends the bytes inline and nothing is allocated)."""
        size = _align(max(data.nbytes, 1))
        with self._lock:
            if self.disabled_reason is not None:
                return None
            offset = self._alloc_locked(size)
        if offset is None and self._reclaim is not None:
            self._reclaim()
        with self._lock:
            if offset is None:
                offset = self._alloc_locked(size)
            if offset is None:
                try:
                    tail = self._size
                    if self._ends and self._ends[-1] == self._size:
                        tail = self._starts[-1]
                    self._grow_to(_align(max(self._size + self._growth, tail + size)))
                except OSError as e:
                    self.disabled_reason = os.strerror(e.errno or errno.EIO)
                    return None
                offset = self._alloc_locked(size)
                if offset is None:
                    return None
        done = 0
        try:
            while done < data.nbytes:
                n = os.pwrite(self._fd, data[done:], offset + done)
                if n <= 0:
                    raise OSError(errno.EIO, "no progress writing shared memory")
                done += n
        except OSError as e:
            # Typically ENOSPC (a full /dev/shm). The space stays off for this process — the tensor and all
            # later ones go inline, which always works — and the host is told once how to fix it.
            self.release(offset, size)
            with self._lock:
                self.disabled_reason = os.strerror(e.errno or errno.EIO)
            return None
        return offset
