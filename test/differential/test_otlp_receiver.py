"""The test receiver itself (otlp_receiver.py), so a span comparison never rests on a decoder that reads
ids wrong: OTLP/JSON as the OTLP specification writes it (hex ids, enums as integers, 64-bit times as
strings) decodes to the same ExportTraceServiceRequest as its protobuf encoding, both are answered in their
own encoding, and a body that is not an ExportTraceServiceRequest is refused with 400 and recorded.
"""

from __future__ import annotations

import json

from diff_wire import request
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from otlp_receiver import OtlpReceiver

TRACE_ID = "5b8efff798038103d269b633813fc60c"
SPAN_ID = "eee19b7ec3c1b174"
PARENT_ID = "eee19b7ec3c1b173"

SPEC_JSON = {
    "resourceSpans": [
        {
            "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "my.service"}}]},
            "scopeSpans": [
                {
                    "scope": {"name": "my.library", "version": "1.0.0"},
                    "spans": [
                        {
                            "traceId": TRACE_ID,
                            "spanId": SPAN_ID,
                            "parentSpanId": PARENT_ID,
                            "name": "I'm a server span",
                            "startTimeUnixNano": "1544712660000000000",
                            "endTimeUnixNano": "1544712661000000000",
                            "kind": 2,
                            "attributes": [{"key": "my.span.attr", "value": {"intValue": "42"}}],
                            "events": [{"name": "E", "timeUnixNano": "1544712660500000000"}],
                        }
                    ],
                }
            ],
        }
    ]
}


def _port(url: str) -> int:
    return int(url.split(":")[2].split("/")[0])


def test_json_and_protobuf_decode_to_the_same_request() -> None:
    with OtlpReceiver() as receiver:
        port = _port(receiver.url)
        reply = request(
            port, "POST", "/v1/traces", json.dumps(SPEC_JSON).encode(), {"Content-Type": "application/json"}
        )
        assert reply.status == 200
        assert reply.headers["content-type"] == "application/json"
        as_json = receiver.requests[0][1]
        reply = request(
            port,
            "POST",
            "/v1/traces",
            as_json.SerializeToString(),
            {"Content-Type": "application/x-protobuf"},
        )
        assert reply.status == 200
        assert reply.headers["content-type"] == "application/x-protobuf"
        assert ExportTraceServiceRequest.FromString(as_json.SerializeToString()) == receiver.requests[1][1]
        [a, b] = receiver.spans()
    assert (a.encoding, b.encoding) == ("json", "protobuf")
    for s in (a, b):
        assert (s.trace_id, s.span_id, s.parent_span_id) == (TRACE_ID, SPAN_ID, PARENT_ID)
        assert s.attributes == {"my.span.attr": 42}
        assert s.resource == {"service.name": "my.service"}
        assert s.scope == "my.library"
        assert s.events == ["E"]
        assert s.span.start_time_unix_nano == 1544712660000000000


def test_a_body_that_is_not_a_request_is_refused_and_recorded() -> None:
    with OtlpReceiver() as receiver:
        port = _port(receiver.url)
        bad_json = request(
            port, "POST", "/v1/traces", b'{"resourceSpans": 3}', {"Content-Type": "application/json"}
        )
        bad_proto = request(
            port, "POST", "/v1/traces", b"\xff\xff\xff", {"Content-Type": "application/x-protobuf"}
        )
        assert (bad_json.status, bad_proto.status) == (400, 400)
        assert len(receiver.errors) == 2
        assert receiver.spans() == []
