"""An OTLP/HTTP trace receiver for the tests, on the `opentelemetry-proto` package (the OpenTelemetry
project's own generated messages): it listens on a real socket, accepts POST /v1/traces as protobuf
(`application/x-protobuf`) or JSON (`application/json`), decodes each body into an
ExportTraceServiceRequest, answers an ExportTraceServiceResponse in the same encoding, and keeps the requests
so a test can read the spans back with their resource and scope.

A body that is not a valid ExportTraceServiceRequest is answered 400 and recorded in `errors`, so a test can
assert none arrived: an exporter that sends something a collector cannot read fails the test.

OTLP/JSON differs from protobuf's canonical JSON mapping in one place the decoder must know: trace and span
ids are hex strings, not base64 (OTLP specification, "JSON Protobuf Encoding"). They are turned into base64
before `json_format.Parse`; everything else (lowerCamelCase names, enums as integers, 64-bit integers as
strings or numbers) the protobuf parser reads as is.
"""

from __future__ import annotations

import base64
import gzip
import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

_HEX_ID_FIELDS = frozenset({"traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id"})


def _hex_ids_to_base64(node: Any) -> Any:
    """OTLP/JSON's hex trace and span ids, as the base64 protobuf's JSON parser expects for bytes."""
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in _HEX_ID_FIELDS and isinstance(value, str):
                out[key] = base64.b64encode(bytes.fromhex(value)).decode("ascii")
            else:
                out[key] = _hex_ids_to_base64(value)
        return out
    if isinstance(node, list):
        return [_hex_ids_to_base64(v) for v in node]
    return node


def decode_json(body: bytes) -> ExportTraceServiceRequest:
    message = ExportTraceServiceRequest()
    json_format.Parse(json.dumps(_hex_ids_to_base64(json.loads(body))), message)
    return message


def value_of(v: AnyValue) -> Any:
    """An attribute value as plain Python (the one field of the oneof that is set)."""
    kind = v.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [value_of(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return attributes(v.kvlist_value.values)
    return getattr(v, kind)


def attributes(kvs: Any) -> dict[str, Any]:
    pairs: list[KeyValue] = list(kvs)
    return {kv.key: value_of(kv.value) for kv in pairs}


@dataclass(frozen=True)
class ReceivedSpan:
    """One span with what it was sent with; ids as lowercase hex ('' for no parent)."""

    span: Span
    resource: dict[str, Any]
    scope: str
    encoding: str

    @property
    def name(self) -> str:
        return self.span.name

    @property
    def trace_id(self) -> str:
        return self.span.trace_id.hex()

    @property
    def span_id(self) -> str:
        return self.span.span_id.hex()

    @property
    def parent_span_id(self) -> str:
        return self.span.parent_span_id.hex()

    @property
    def attributes(self) -> dict[str, Any]:
        return attributes(self.span.attributes)

    @property
    def events(self) -> list[str]:
        return [e.name for e in self.span.events]


class OtlpReceiver:
    """Start with `with OtlpReceiver() as r:`; `r.url` is the /v1/traces endpoint to give the exporter."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, ExportTraceServiceRequest]] = []
        self.errors: list[str] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self._body()
                if (self.headers.get("Content-Encoding") or "").lower() == "gzip":
                    body = gzip.decompress(body)
                content_type = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
                if self.path != "/v1/traces":
                    receiver._error(f"POST {self.path}: not /v1/traces")
                    self._answer(404, "text/plain", b"not found")
                    return
                try:
                    if content_type == "application/x-protobuf":
                        message = ExportTraceServiceRequest.FromString(body)
                        encoding = "protobuf"
                    elif content_type == "application/json":
                        message = decode_json(body)
                        encoding = "json"
                    else:
                        raise ValueError(f"unsupported Content-Type {content_type!r}")
                except (DecodeError, json_format.ParseError, ValueError) as err:
                    receiver._error(f"{content_type}: {err}")
                    self._answer(400, "text/plain", str(err).encode())
                    return
                with receiver._lock:
                    receiver.requests.append((encoding, message))
                response = ExportTraceServiceResponse()
                if encoding == "json":
                    self._answer(200, "application/json", json_format.MessageToJson(response).encode())
                else:
                    self._answer(200, "application/x-protobuf", response.SerializeToString())

            def _body(self) -> bytes:
                """The request body, by Content-Length or chunked (Node's HTTP client sends chunks)."""
                if (self.headers.get("Transfer-Encoding") or "").lower() != "chunked":
                    return self.rfile.read(int(self.headers.get("Content-Length") or 0))
                chunks: list[bytes] = []
                while True:
                    size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                    if size == 0:
                        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                            pass  # trailers
                        return b"".join(chunks)
                    chunks.append(self.rfile.read(size))
                    self.rfile.readline()  # the CRLF after the chunk

            def _answer(self, status: int, content_type: str, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def _error(self, text: str) -> None:
        with self._lock:
            self.errors.append(text)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1/traces"

    def __enter__(self) -> OtlpReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def spans(self) -> list[ReceivedSpan]:
        with self._lock:
            received = list(self.requests)
        out: list[ReceivedSpan] = []
        for encoding, message in received:
            for rs in message.resource_spans:
                resource = attributes(rs.resource.attributes)
                for ss in rs.scope_spans:
                    out.extend(ReceivedSpan(s, resource, ss.scope.name, encoding) for s in ss.spans)
        return out
