"""Length-prefixed binary frames over the control socket (fd 3), the same format the host's
src/backends/python/frames.ts writes and reads:

    u32 LE body length | u8 message type | u32 LE header length | header | blob

The header describes the message: UTF-8 JSON, or a fixed binary layout for the types a reader is told
are binary (EXECUTE_DONE, which only the host reads: messages.execute_done()). Tensor bytes small enough
to travel inline follow as the blob and are referenced by (offset, size) from the header, so no tensor
byte is ever put into a header. Writers from several threads share one lock; the read side is used by
one thread at a time (dispatch.py).
"""

from __future__ import annotations

import json
import json.scanner
import socket
import struct
import threading
from collections.abc import Mapping, Sequence
from typing import Any

_PREFIX = struct.Struct("<IBI")
_LENGTH = struct.Struct("<I")
# The receive buffer: frames up to this size (header and inline tensors) are read with no allocation.
_CHUNK = 65536
# Buffers per sendmsg (Linux takes up to 1024); a frame of more parts is sent part by part.
_MAX_PARTS = 256
# Refuse absurd frames from a confused peer instead of allocating them (4 GiB - 1 is the format's limit).
MAX_BODY = 0xFFFFFFFF


# json.loads without its Python layers (loads -> decode -> raw_decode -> two regex matches): the C scanner
# itself, which the default decoder uses too. Anything it does not take whole goes to json.loads, which
# accepts surrounding whitespace or raises its usual error.
_scan = json.scanner.make_scanner(json.JSONDecoder())  # type: ignore[arg-type]  # typeshed's stub is narrower


def _decode_header(text: str) -> Any:
    try:
        value, end = _scan(text, 0)
    except StopIteration:
        return json.loads(text)
    return value if end == len(text) else json.loads(text)


class Frame:
    __slots__ = ("blob", "head", "header", "type")

    def __init__(self, type_: int, header: dict[str, Any], blob: memoryview, head: bytes = b"") -> None:
        self.type = type_
        self.header = header
        self.blob = blob
        self.head = head  # a binary type's header bytes (b"" for a JSON header)


class FrameReader:
    """Reads whole frames. Bytes are received into one reusable buffer (recv_into: no allocation per
    read); each frame's blob is then copied out into a bytearray of its own, so views into it stay valid
    (and numpy arrays over it writable, as Triton's are). A frame too large for the buffer is received
    straight into its own buffer."""

    def __init__(self, sock: socket.socket, binary: frozenset[int] = frozenset()) -> None:
        self._sock = sock
        self._binary = binary  # types whose header is kept as bytes, not decoded as JSON
        self._buf = bytearray(_CHUNK)
        self._view = memoryview(self._buf)
        # Buffered bytes not yet returned as frames: self._buf[self._start : self._end].
        self._start = 0
        self._end = 0

    def _fill(self, need: int) -> bool:
        """Receives until `need` bytes are buffered (need <= the buffer's size); False at end of stream."""
        if self._start + need > _CHUNK:
            # Move the partial frame to the front (rare: only a frame that straddles the buffer's end).
            n = self._end - self._start
            self._buf[:n] = bytes(self._view[self._start : self._end])
            self._start, self._end = 0, n
        while self._end - self._start < need:
            got = self._sock.recv_into(self._view[self._end :])
            if not got:
                return False
            self._end += got
        return True

    def fileno(self) -> int:
        return self._sock.fileno()

    def has_buffered_frame(self) -> bool:
        """A whole frame is already buffered (so reading it will not block)."""
        if self._end - self._start < 4:
            return False
        body_len: int = _LENGTH.unpack_from(self._buf, self._start)[0]
        return self._end - self._start >= 4 + body_len

    def read(self) -> Frame | None:
        """The next frame, or None when the host closed the socket."""
        if self._end - self._start < 4 and not self._fill(4):
            return None
        start = self._start
        (body_len,) = _LENGTH.unpack_from(self._buf, start)
        if body_len < 5:
            raise ValueError(f"malformed frame: body of {body_len} bytes")
        if 4 + body_len <= _CHUNK:
            if self._end - start < 4 + body_len:
                if not self._fill(4 + body_len):
                    return None
                start = self._start
            body = self._view[start + 4 : start + 4 + body_len]
            self._start = start + 4 + body_len
        else:
            # A large frame: what is buffered, then the rest received straight into the frame's buffer.
            whole = bytearray(body_len)
            n = self._end - start - 4
            whole[:n] = self._view[start + 4 : self._end]
            self._start = self._end = 0
            body = memoryview(whole)
            while n < body_len:
                got = self._sock.recv_into(body[n:])
                if got == 0:
                    return None
                n += got
        if self._start == self._end:
            self._start = self._end = 0
        type_ = body[0]
        (header_len,) = _LENGTH.unpack_from(body, 1)
        if 5 + header_len > body_len:
            raise ValueError("malformed frame: header longer than the frame")
        head = b""
        header: Any
        if type_ in self._binary:
            head, header = bytes(body[5 : 5 + header_len]), {}
        else:
            header = _decode_header(str(body[5 : 5 + header_len], "utf-8")) if header_len else {}
        if not isinstance(header, dict):
            raise ValueError("malformed frame: header is not an object")
        if body.obj is self._buf:
            # The blob leaves the receive buffer, which the next read overwrites.
            blob = memoryview(bytearray(body[5 + header_len :]))
        else:
            blob = body[5 + header_len :]
        return Frame(type_, header, blob, head)


class FrameWriter:
    """Writes frames from any thread; one frame is written whole before the next begins."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._lock = threading.Lock()

    def send(self, type_: int, header: Mapping[str, Any], blobs: Sequence[bytes | memoryview] = ()) -> None:
        self.send_text(type_, json.dumps(header, separators=(",", ":")), blobs)

    def send_text(self, type_: int, header: str, blobs: Sequence[bytes | memoryview] = ()) -> None:
        """Sends a header that is already JSON text (the hot paths build it directly). Blobs are bytes or
        memoryviews of format "B" (every one this stub makes), so len() is their size."""
        self.send_bytes(type_, header.encode("utf-8"), blobs)

    def send_bytes(self, type_: int, head: bytes, blobs: Sequence[bytes | memoryview] = ()) -> None:
        """Sends a header that is already bytes (JSON text, or EXECUTE_DONE's binary layout)."""
        blob_len = sum(map(len, blobs))
        body_len = 5 + len(head) + blob_len
        if body_len > MAX_BODY:
            raise ValueError(f"frame of {body_len} bytes exceeds the control channel's limit")
        prefix = _PREFIX.pack(body_len, type_, len(head))
        parts = [prefix, head, *blobs]
        with self._lock:
            if len(parts) > _MAX_PARTS:
                if body_len < 65536:
                    self._sock.sendall(b"".join(parts))
                else:
                    self._send_rest(0, parts)
                return
            # One system call for the whole frame (no join copy); a blocking stream socket normally takes
            # it all, and whatever it did not take is sent after.
            sent = self._sock.sendmsg(parts)
            if sent < 4 + body_len:
                self._send_rest(sent, parts)

    def _send_rest(self, sent: int, parts: Sequence[bytes | memoryview]) -> None:
        """Sends `parts` after their first `sent` bytes, one part at a time."""
        for part in parts:
            view = memoryview(part).cast("B")
            if sent >= view.nbytes:
                sent -= view.nbytes
                continue
            self._sock.sendall(view[sent:])
            sent = 0
