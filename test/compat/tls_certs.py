"""Certificates for the TLS tests, made by test/fixtures/make-test-certs.sh with openssl (the script the
node:test suites use too; the file names are listed there), and raw TLS helpers that tritonclient does not
offer: the certificate a new connection is served, and HTTP/1.1 requests over one kept-alive TLS connection,
so a test knows which connection carried a request."""

from __future__ import annotations

import socket
import ssl
import subprocess
from pathlib import Path

from nereid_server import REPO_ROOT

SCRIPT = REPO_ROOT / "test" / "fixtures" / "make-test-certs.sh"


def make_certs(folder: Path) -> Path:
    """A fresh CA, server and client certificates in `folder`."""
    subprocess.run(["bash", str(SCRIPT), str(folder)], check=True, capture_output=True)
    return folder


def client_context(ca: Path, alpn: str, cert: Path | None = None, key: Path | None = None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(ca))
    context.set_alpn_protocols([alpn])
    if cert is not None:
        context.load_cert_chain(str(cert), str(key))
    return context


def served_serial(port: int, ca: Path, alpn: str = "h2") -> str:
    """The serial number (hex, as openssl prints it) of the certificate a new connection to `port` gets."""
    context = client_context(ca, alpn)
    with (
        socket.create_connection(("127.0.0.1", port), timeout=30) as raw,
        context.wrap_socket(raw, server_hostname="localhost") as tls,
    ):
        return _serial(tls)


def _serial(tls: ssl.SSLSocket) -> str:
    peer = tls.getpeercert()
    assert peer is not None, "the server sent no certificate"
    return str(peer["serialNumber"])


class KeptAliveHttps:
    """One HTTPS connection that stays open between requests (HTTP/1.1 keep-alive)."""

    def __init__(self, port: int, ca: Path) -> None:
        raw = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.sock = client_context(ca, "http/1.1").wrap_socket(raw, server_hostname="localhost")
        self.buffer = b""

    @property
    def serial(self) -> str:
        return _serial(self.sock)

    def get(self, path: str) -> tuple[int, bytes]:
        """GET `path` on this connection: the status and the body."""
        self.sock.sendall(f"GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n".encode())
        while b"\r\n\r\n" not in self.buffer:
            self._fill()
        head, _, self.buffer = self.buffer.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ")[1])
        length = 0
        for line in lines[1:]:
            name, _, value = line.partition(":")
            if name.strip().lower() == "content-length":
                length = int(value.strip())
        while len(self.buffer) < length:
            self._fill()
        body, self.buffer = self.buffer[:length], self.buffer[length:]
        return status, body

    def _fill(self) -> None:
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("the server closed the connection")
        self.buffer += chunk

    def close(self) -> None:
        self.sock.close()
