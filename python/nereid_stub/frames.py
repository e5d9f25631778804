"""Length-prefixed binary frames over the control socket (fd 3), the same format the host's
src/backends/python/frames.ts writes and reads:

    u32 LE body length | u8 message type | u32 LE header length | header (UTF-8 JSON) | blob

The JSON header describes the message; tensor bytes small enough to travel inline follow as the blob and
are referenced by (offset, size) from the header, so no tensor byte is ever put into JSON. Writers from
several threads share one lock; the read side is used by one thread at a time (dispatch.py).
"""

from __future__ import annotations

import json
import socket
import struct
import threading
from collections.abc import Mapping, Sequence
from typing import Any

_PREFIX = struct.Struct("<IBI")
_LENGTH = struct.Struct("<I")
# Refuse absurd frames from a confused peer instead of allocating them (4 GiB - 1 is the format's limit).
MAX_BODY = 0xFFFFFFFF


class Frame:
    __slots__ = ("blob", "header", "type")

    def __init__(self, type_: int, header: dict[str, Any], blob: memoryview) -> None:
        self.type = type_
        self.header = header
        self.blob = blob


class FrameReader:
    """Reads whole frames; each frame's body is its own bytearray, so views into it stay valid. A small
    frame costs one recv and one copy (out of the receive buffer); a large one is received in place."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._pending = bytearray()

    def _recv_more(self) -> bool:
        chunk = self._sock.recv(65536)
        if not chunk:
            return False
        self._pending += chunk
        return True

    def fileno(self) -> int:
        return self._sock.fileno()

    def has_buffered_frame(self) -> bool:
        """A whole frame is already buffered (so reading it will not block)."""
        if len(self._pending) < 4:
            return False
        body_len: int = _LENGTH.unpack_from(self._pending, 0)[0]
        return len(self._pending) >= 4 + body_len

    def read(self) -> Frame | None:
        """The next frame, or None when the host closed the socket."""
        pending = self._pending
        while len(pending) < 4:
            if not self._recv_more():
                return None
        (body_len,) = _LENGTH.unpack_from(pending, 0)
        if body_len < 5:
            raise ValueError(f"malformed frame: body of {body_len} bytes")
        end = 4 + body_len
        if len(pending) < end and body_len < 65536:
            while len(pending) < end:
                if not self._recv_more():
                    return None
        if len(pending) >= end:
            body = pending[4:end]
            del pending[:end]
        else:
            # A large frame: what is buffered, then the rest received straight into the frame's buffer.
            body = bytearray(body_len)
            n = len(pending) - 4
            body[:n] = memoryview(pending)[4:]
            pending.clear()
            view = memoryview(body)
            while n < body_len:
                got = self._sock.recv_into(view[n:])
                if got == 0:
                    return None
                n += got
        view = memoryview(body)
        type_ = body[0]
        (header_len,) = _LENGTH.unpack_from(body, 1)
        if 5 + header_len > body_len:
            raise ValueError("malformed frame: header longer than the frame")
        header = json.loads(str(view[5 : 5 + header_len], "utf-8")) if header_len else {}
        if not isinstance(header, dict):
            raise ValueError("malformed frame: header is not an object")
        return Frame(type_, header, view[5 + header_len :])


class FrameWriter:
    """Writes frames from any thread; one frame is written whole before the next begins."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._lock = threading.Lock()

    def send(self, type_: int, header: Mapping[str, Any], blobs: Sequence[bytes | memoryview] = ()) -> None:
        self.send_text(type_, json.dumps(header, separators=(",", ":")), blobs)

    def send_text(self, type_: int, header: str, blobs: Sequence[bytes | memoryview] = ()) -> None:
        """Sends a header that is already JSON text (the hot paths build it directly)."""
        head = header.encode("utf-8")
        blob_len = sum(len(b) if isinstance(b, bytes) else b.nbytes for b in blobs)
        body_len = 5 + len(head) + blob_len
        if body_len > MAX_BODY:
            raise ValueError(f"frame of {body_len} bytes exceeds the control channel's limit")
        prefix = _PREFIX.pack(body_len, type_, len(head))
        with self._lock:
            if blob_len < 65536:
                self._sock.sendall(b"".join([prefix, head, *blobs]))
            else:
                self._sock.sendall(prefix + head)
                for b in blobs:
                    self._sock.sendall(b)
