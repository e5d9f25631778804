"""The gRPC port against hostile clients, with a raw HTTP/2 client (h2, and hand-made frames where even h2
will not send them), against the real server process: reset floods and deaf connections must not leak file
descriptors (the server runs with a 200-descriptor limit; in the report of issue 23, 365 flooding
connections exhausted a 400-descriptor limit and every port stopped answering), prefixes declaring 2 GiB
and gzip bombs must not take memory, abusive pings get GOAWAY ENHANCE_YOUR_CALM, unanswered keepalive
pings close the connection; the real tritonclient keeps working during and after, and reads compressed
responses. Every wait is for a condition with a generous deadline; memory and descriptor bounds are
generous too."""

from __future__ import annotations

import contextlib
import http.client
import socket
import struct
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

import h2.events
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from h2.config import H2Configuration
from h2.connection import H2Connection
from h2.errors import ErrorCodes
from tritonclient.grpc import service_pb2

from nereid_server import MODEL_REPOSITORY, NereidServer, node_executable, start_server

SERVICE = "/inference.GRPCInferenceService"
FD_LIMIT = 200


def _fds(pid: int) -> int:
    return len(list(Path(f"/proc/{pid}/fd").iterdir()))


def _status_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} in /proc/{pid}/status")


def _eventually(cond: Callable[[], bool], what: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for: {what}")
        time.sleep(0.05)


def _live(http_port: int) -> bool:
    conn = http.client.HTTPConnection("127.0.0.1", http_port, timeout=60)
    try:
        conn.request("GET", "/v2/health/live")
        return conn.getresponse().status == 200
    finally:
        conn.close()


def _headers(method: str, extra: list[tuple[str, str]] | None = None) -> list[tuple[str, str]]:
    return [
        (":method", "POST"),
        (":scheme", "http"),
        (":path", f"{SERVICE}/{method}"),
        (":authority", "localhost"),
        ("content-type", "application/grpc"),
        ("te", "trailers"),
        *(extra or []),
    ]


def _frame(kind: int, flags: int, stream_id: int, payload: bytes) -> bytes:
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream_id) + payload


def _simple_request() -> bytes:
    request = service_pb2.ModelInferRequest()
    request.model_name = "simple"
    for name in ("INPUT0", "INPUT1"):
        tensor = request.inputs.add()
        tensor.name = name
        tensor.datatype = "INT32"
        tensor.shape.extend([1, 16])
        request.raw_input_contents.append(np.arange(16, dtype=np.int32).tobytes())
    data: bytes = request.SerializeToString()
    return data


class H2Client:
    """One HTTP/2 connection driven by h2: frames as the test wants them, the server's answers as events."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=60)
        self.conn = H2Connection(H2Configuration(client_side=True, header_encoding="utf-8"))
        self.conn.initiate_connection()
        self.events: list[h2.events.Event] = []
        self.eof = False
        self.flush()
        self.wait_for(lambda: any(isinstance(e, h2.events.RemoteSettingsChanged) for e in self.events))

    def flush(self) -> None:
        data = self.conn.data_to_send()
        if data:
            try:
                self.sock.sendall(data)
            except OSError:
                self.eof = True

    def pump(self, timeout: float = 1.0) -> None:
        """Reads what the server sent (answering its PINGs and SETTINGS, as h2 does)."""
        if self.eof:
            return
        self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(1 << 20)
        except TimeoutError:
            return
        except OSError:
            data = b""
        if not data:
            self.eof = True
            return
        with contextlib.suppress(h2.exceptions.ProtocolError):
            self.events.extend(self.conn.receive_data(data))
        self.flush()

    def wait_for(self, cond: Callable[[], bool], timeout: float = 120.0) -> bool:
        deadline = time.monotonic() + timeout
        while not cond():
            if self.eof or time.monotonic() > deadline:
                return cond()
            self.pump(0.5)
        return True

    def send_message(
        self, stream_id: int, message: bytes, compressed: bool = False, end: bool = True
    ) -> None:
        """One length-prefixed gRPC message, within the flow-control windows."""
        data = bytes([1 if compressed else 0]) + struct.pack(">I", len(message)) + message
        while data and not self.eof:
            window = min(self.conn.local_flow_control_window(stream_id), self.conn.max_outbound_frame_size)
            if window <= 0:
                self.pump(0.5)
                continue
            self.conn.send_data(stream_id, data[:window])
            data = data[window:]
            self.flush()
        if end and not self.eof:
            self.conn.end_stream(stream_id)
            self.flush()

    def trailers(self, stream_id: int) -> dict[str, str] | None:
        for e in self.events:
            if isinstance(e, h2.events.TrailersReceived) and e.stream_id == stream_id:
                return {str(k): str(v) for k, v in e.headers}
            if isinstance(e, h2.events.ResponseReceived) and e.stream_id == stream_id:
                headers = {str(k): str(v) for k, v in e.headers}
                if "grpc-status" in headers:
                    return headers
        return None

    def response_headers(self, stream_id: int) -> dict[str, str]:
        for e in self.events:
            if isinstance(e, h2.events.ResponseReceived) and e.stream_id == stream_id:
                return {str(k): str(v) for k, v in e.headers}
        return {}

    def data(self, stream_id: int) -> bytes:
        return b"".join(
            e.data for e in self.events if isinstance(e, h2.events.DataReceived) and e.stream_id == stream_id
        )

    def terminated(self) -> h2.events.ConnectionTerminated | None:
        for e in self.events:
            if isinstance(e, h2.events.ConnectionTerminated):
                return e
        return None

    def close(self) -> None:
        self.sock.close()


def _has_trailers(client: H2Client, stream_id: int) -> Callable[[], bool]:
    return lambda: client.trailers(stream_id) is not None


def _read_until_closed(sock: socket.socket, timeout: float = 120.0) -> bytes:
    """What the server sent until it closed the socket; fails if it never does."""
    sock.settimeout(timeout)
    received = bytearray()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            chunk = sock.recv(1 << 16)
        except ConnectionResetError:
            return bytes(received)
        if not chunk:
            return bytes(received)
        received += chunk
    raise AssertionError("the server never closed the connection")


def _goaway_codes(data: bytes) -> list[tuple[int, bytes]]:
    out = []
    pos = 0
    while pos + 9 <= len(data):
        length = int.from_bytes(data[pos : pos + 3], "big")
        if data[pos + 3] == 7 and pos + 9 + length <= len(data):
            payload = data[pos + 9 : pos + 9 + length]
            out.append((int.from_bytes(payload[4:8], "big"), payload[8:]))
        pos += 9 + length
    return out


class _Traffic:
    """The real tritonclient inferring in a loop on its own thread: the well-behaved neighbour."""

    def __init__(self, grpc_url: str) -> None:
        self.client = grpcclient.InferenceServerClient(url=grpc_url)
        self.ok = 0
        self.errors: list[str] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def infer_once(self) -> None:
        inputs = []
        for name in ("INPUT0", "INPUT1"):
            tensor = grpcclient.InferInput(name, [1, 16], "INT32")
            tensor.set_data_from_numpy(np.arange(16, dtype=np.int32).reshape(1, 16))
            inputs.append(tensor)
        result = self.client.infer("simple", inputs, client_timeout=60)
        assert (result.as_numpy("OUTPUT0") == 2 * np.arange(16).reshape(1, 16)).all()

    def _run(self) -> None:
        while not self.stop.is_set():
            try:
                self.infer_once()
                self.ok += 1
            except Exception as e:
                self.errors.append(repr(e))
            time.sleep(0.02)

    def finish(self) -> None:
        self.stop.set()
        self.thread.join(timeout=120)
        self.client.close()


@pytest.fixture(scope="module")
def limited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NereidServer]:
    """A server with 200 descriptors, Triton's keepalive defaults, and a 2 s ping timeout."""
    if node_executable() is None:
        pytest.skip("node is not installed")
    server = start_server(
        [
            f"--model-repository={MODEL_REPOSITORY}",
            "--model-control-mode=explicit",
            "--load-model=simple",
            "--http-port=0",
            "--grpc-port=0",
            "--allow-metrics=false",
            "--grpc-keepalive-timeout=2000",
        ],
        tmp_path_factory.mktemp("hostile") / "server.log",
        fd_limit=FD_LIMIT,
    )
    try:
        server.url("grpc")
        yield server
    finally:
        code = server.stop()
        assert code == 0, f"server exited with code {code}; log:\n{server.log_tail()}"


@pytest.fixture(scope="module")
def keepalive(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NereidServer]:
    """A server pinging every connection every 300 ms, closing those that do not answer in 1 s, and
    compressing inference responses at level high."""
    if node_executable() is None:
        pytest.skip("node is not installed")
    server = start_server(
        [
            f"--model-repository={MODEL_REPOSITORY}",
            "--model-control-mode=explicit",
            "--load-model=simple",
            "--http-port=0",
            "--grpc-port=0",
            "--allow-metrics=false",
            "--grpc-keepalive-time=300",
            "--grpc-keepalive-timeout=1000",
            "--grpc-keepalive-permit-without-calls=true",
            "--grpc-http2-max-pings-without-data=0",
            "--grpc-infer-response-compression-level=high",
        ],
        tmp_path_factory.mktemp("keepalive") / "server.log",
    )
    try:
        server.url("grpc")
        yield server
    finally:
        code = server.stop()
        assert code == 0, f"server exited with code {code}; log:\n{server.log_tail()}"


def _ports(server: NereidServer) -> tuple[int, int]:
    grpc_port = server.wait_for("grpc", 10)
    assert grpc_port is not None
    return server.ports["http"], grpc_port


def test_reset_floods_do_not_leak_descriptors(limited: NereidServer) -> None:
    http_port, grpc_port = _ports(limited)
    pid = limited.process.pid
    traffic = _Traffic(f"localhost:{grpc_port}")
    try:
        _eventually(lambda: traffic.ok > 0, "the well-behaved client's first answer")
        base = _fds(pid)
        # HEADERS + RST_STREAM pairs, past the server's limit of 500 in a burst (nghttp2's own guard trips
        # at 1,000). Every fresh connection encodes them to the same bytes.
        conn = H2Connection(H2Configuration(client_side=True))
        conn.initiate_connection()
        for _ in range(700):
            stream_id = conn.get_next_available_stream_id()
            conn.send_headers(stream_id, _headers("ServerLive"))
            conn.reset_stream(stream_id, error_code=ErrorCodes.CANCEL)
        flood = conn.data_to_send()
        for i in range(FD_LIMIT + 50):  # more connections than the server has descriptors
            sock = socket.create_connection(("127.0.0.1", grpc_port), timeout=60)
            try:
                with contextlib.suppress(OSError):  # the server may close before the flood is out
                    sock.sendall(flood)
                if i % 2 == 0:
                    # This client stays: the server itself must close the socket.
                    received = _read_until_closed(sock)
                    assert (11, b"too_many_resets") in _goaway_codes(received), _goaway_codes(received)
            finally:
                sock.close()  # the other half leaves at once (the CLOSE-WAIT case)
        assert _live(http_port)
        _eventually(lambda: _fds(pid) <= base + 5, f"descriptors back near {base} (now {_fds(pid)})")
        traffic.infer_once()
    finally:
        traffic.finish()
    assert traffic.errors == [], traffic.errors[:5]
    assert traffic.ok > 0


def test_deaf_connections_are_closed(limited: NereidServer) -> None:
    """DATA on stream 0: nghttp2 answers GOAWAY PROTOCOL_ERROR and stops reading; a liveness ping finds it."""
    http_port, grpc_port = _ports(limited)
    pid = limited.process.pid
    base = _fds(pid)
    socks = []
    for i in range(60):
        conn = H2Connection(H2Configuration(client_side=True))
        conn.initiate_connection()
        conn.send_headers(1, _headers("ModelStreamInfer"))
        sock = socket.create_connection(("127.0.0.1", grpc_port), timeout=60)
        sock.sendall(conn.data_to_send() + _frame(0, 0, 0, b"bad"))
        if i % 2 == 0:
            sock.shutdown(socket.SHUT_WR)
        socks.append(sock)
    for sock in socks:
        received = _read_until_closed(sock)
        assert any(code == ErrorCodes.PROTOCOL_ERROR for code, _ in _goaway_codes(received))
        sock.close()
    _eventually(lambda: _fds(pid) <= base + 5, f"descriptors back near {base} (now {_fds(pid)})")
    assert _live(http_port)


def test_declared_sizes_take_no_memory_and_health_answers(limited: NereidServer) -> None:
    http_port, grpc_port = _ports(limited)
    pid = limited.process.pid
    rss_before = _status_kb(pid, "VmRSS")
    client = H2Client(grpc_port)
    try:
        prefix = b"\x00\x7f\xff\xff\xff"  # a 2 GiB message, of which nothing follows
        for _ in range(900):
            stream_id = client.conn.get_next_available_stream_id()
            client.conn.send_headers(stream_id, _headers("ModelInfer"))
            client.conn.send_data(stream_id, prefix)
        client.flush()
        client.pump(1.0)
        assert _live(http_port)
        grown_mb = (_status_kb(pid, "VmRSS") - rss_before) / 1024
        assert grown_mb < 256, f"RSS grew by {grown_mb:.0f} MB for 900 streams declaring 2 GiB"
        traffic = _Traffic(f"localhost:{grpc_port}")
        try:
            traffic.infer_once()
        finally:
            traffic.finish()
    finally:
        client.close()


def test_gzip_bombs_are_refused_at_the_cap(limited: NereidServer) -> None:
    http_port, grpc_port = _ports(limited)
    pid = limited.process.pid
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)  # gzip
    zeros = bytes(1 << 20)
    bomb = b"".join(compressor.compress(zeros) for _ in range(256)) + compressor.flush()  # 256 MiB inflated
    assert len(bomb) < 1 << 20
    hwm_before = _status_kb(pid, "VmHWM")
    rss_before = _status_kb(pid, "VmRSS")
    clients = [H2Client(grpc_port) for _ in range(3)]
    try:
        for c in clients:
            c.conn.send_headers(1, _headers("ModelInfer", [("grpc-encoding", "gzip")]))
            c.send_message(1, bomb, compressed=True)
        for c in clients:
            assert c.wait_for(_has_trailers(c, 1)), "no answer to the bomb"
            trailers = c.trailers(1)
            assert trailers is not None
            assert trailers["grpc-status"] == "8", trailers
            assert "decompressed beyond 67108864 bytes" in trailers.get("grpc-message", ""), trailers
    finally:
        for c in clients:
            c.close()
    peak_mb = (_status_kb(pid, "VmHWM") - max(hwm_before, rss_before)) / 1024
    assert peak_mb < 512, f"peak RSS rose by {peak_mb:.0f} MB for three 256 MiB bombs (cap 64 MiB)"
    assert _live(http_port)


def test_ping_abuse_gets_enhance_your_calm(limited: NereidServer) -> None:
    _, grpc_port = _ports(limited)
    client = H2Client(grpc_port)
    try:
        for i in range(5):
            client.conn.ping(struct.pack(">Q", i))
        client.flush()
        assert client.wait_for(lambda: client.terminated() is not None), "no GOAWAY"
        goaway = client.terminated()
        assert goaway is not None
        assert goaway.error_code == ErrorCodes.ENHANCE_YOUR_CALM
        assert goaway.additional_data == b"too_many_pings"
        assert client.wait_for(lambda: client.eof), "the server did not close the connection"
    finally:
        client.close()


def test_unanswered_keepalive_pings_close_the_connection(keepalive: NereidServer) -> None:
    http_port, grpc_port = _ports(keepalive)
    conn = H2Connection(H2Configuration(client_side=True))
    conn.initiate_connection()
    sock = socket.create_connection(("127.0.0.1", grpc_port), timeout=60)
    try:
        sock.sendall(conn.data_to_send())
        received = _read_until_closed(sock)  # never answers anything
        kinds = []
        pos = 0
        while pos + 9 <= len(received):
            kinds.append(received[pos + 3])
            pos += 9 + int.from_bytes(received[pos : pos + 3], "big")
        assert 6 in kinds, f"no PING among the frame types {kinds}"
    finally:
        sock.close()
    assert _live(http_port)


def test_tritonclient_answers_keepalive_and_reads_compressed_responses(keepalive: NereidServer) -> None:
    _, grpc_port = _ports(keepalive)
    traffic = _Traffic(f"localhost:{grpc_port}")
    try:
        time.sleep(3)  # ten keepalive periods, with inferences going on
        traffic.infer_once()
    finally:
        traffic.finish()
    assert traffic.errors == [], traffic.errors[:5]
    assert traffic.ok > 0
    # The same request over h2: the response is deflated (level high, both algorithms accepted).
    client = H2Client(grpc_port)
    try:
        accept = [("grpc-accept-encoding", "identity,deflate,gzip")]
        client.conn.send_headers(1, _headers("ModelInfer", accept))
        client.send_message(1, _simple_request())
        assert client.wait_for(lambda: client.trailers(1) is not None)
        assert client.response_headers(1).get("grpc-encoding") == "deflate"
        data = client.data(1)
        assert data[0] == 1, "the message is flagged compressed"
        response = service_pb2.ModelInferResponse()
        response.ParseFromString(zlib.decompress(data[5:]))
        out = np.frombuffer(response.raw_output_contents[0], dtype=np.int32)
        assert (out == 2 * np.arange(16)).all()
    finally:
        client.close()


@pytest.fixture(scope="module")
def identity(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NereidServer]:
    """A server with identity_fp32 and Triton's ping-abuse defaults (300 s, 2 strikes)."""
    if node_executable() is None:
        pytest.skip("node is not installed")
    server = start_server(
        [
            f"--model-repository={MODEL_REPOSITORY}",
            "--model-control-mode=explicit",
            "--load-model=identity_fp32",
            "--http-port=0",
            "--grpc-port=0",
            "--allow-metrics=false",
            "--log-verbose=1",  # a connection killed for its pings is logged at verbose level only
        ],
        tmp_path_factory.mktemp("identity") / "server.log",
    )
    try:
        server.url("grpc")
        yield server
    finally:
        code = server.stop()
        assert code == 0, f"server exited with code {code}; log:\n{server.log_tail()}"


def test_bdp_pings_while_a_large_response_streams_out_are_not_abuse(identity: NereidServer) -> None:
    # grpcio pings (BDP estimation) while it reads a large message; the server is sending DATA the whole
    # time, so those pings are not "without data". Before, a 256 MiB answer drew GOAWAY too_many_pings.
    _, grpc_port = _ports(identity)
    client = grpcclient.InferenceServerClient(f"localhost:{grpc_port}")
    try:
        n = 40 * 1024 * 1024  # 160 MiB of FP32 each way
        data = np.ones((1, n), np.float32)
        tensor = grpcclient.InferInput("INPUT0", [1, n], "FP32")
        tensor.set_data_from_numpy(data)
        for _ in range(2):
            out = client.infer("identity_fp32", [tensor]).as_numpy("OUTPUT0")
            assert out is not None
            assert out.shape == (1, n)
        assert client.is_server_live()
    finally:
        client.close()
    assert "too_many_pings" not in identity.log_text(), "the client's BDP pings were taken for abuse"


def test_reset_flood_with_no_error_codes_gets_enhance_your_calm(limited: NereidServer) -> None:
    # h2's reset_stream sends NO_ERROR unless told otherwise; those resets count as well. Before, they
    # went uncounted until nghttp2's own guard closed the connection at ~1,050 with INTERNAL_ERROR.
    http_port, grpc_port = _ports(limited)
    conn = H2Connection(H2Configuration(client_side=True))
    conn.initiate_connection()
    for _ in range(700):
        stream_id = conn.get_next_available_stream_id()
        conn.send_headers(stream_id, _headers("ServerLive"))
        conn.reset_stream(stream_id, error_code=ErrorCodes.NO_ERROR)
    sock = socket.create_connection(("127.0.0.1", grpc_port), timeout=60)
    try:
        with contextlib.suppress(OSError):
            sock.sendall(conn.data_to_send())
        received = _read_until_closed(sock)
    finally:
        sock.close()
    assert (11, b"too_many_resets") in _goaway_codes(received), _goaway_codes(received)
    assert _live(http_port)
