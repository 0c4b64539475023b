"""A tiny OTLP/HTTP trace receiver: accepts ``POST /v1/traces`` (protobuf, gzip or not), decodes it with
``opentelemetry-proto`` and keeps every span with its resource's attributes, for tests that check what a
real exporter sends."""

from __future__ import annotations

import gzip
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


@dataclass
class ReceivedSpan:
    name: str
    trace_id: str
    span_id: str
    parent_span_id: str
    attributes: dict[str, Any]
    resource: dict[str, Any]


def _value(v: Any) -> Any:
    kind = v.WhichOneof("value")
    return getattr(v, kind) if kind else None


@dataclass
class Receiver:
    url: str
    spans: list[ReceivedSpan] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, body: bytes, headers: dict[str, str]) -> None:
        request = ExportTraceServiceRequest.FromString(body)
        with self.lock:
            self.headers.append(headers)
            for rs in request.resource_spans:
                resource = {a.key: _value(a.value) for a in rs.resource.attributes}
                for ss in rs.scope_spans:
                    for s in ss.spans:
                        self.spans.append(ReceivedSpan(
                            name=s.name, trace_id=s.trace_id.hex(), span_id=s.span_id.hex(),
                            parent_span_id=s.parent_span_id.hex(),
                            attributes={a.key: _value(a.value) for a in s.attributes}, resource=resource))

    def wait_for_span(self, name: str, timeout: float = 10.0) -> ReceivedSpan:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                hit = next((s for s in self.spans if s.name == name), None)
            if hit is not None:
                return hit
            time.sleep(0.02)
        raise AssertionError(f"no span {name!r} received; got {[s.name for s in self.spans]}")


def start_receiver() -> tuple[Receiver, ThreadingHTTPServer]:
    receiver: Receiver

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            if self.headers.get("content-encoding") == "gzip":
                body = gzip.decompress(body)
            if self.path != "/v1/traces":
                self.send_response(404)
                self.end_headers()
                return
            receiver.add(body, {k.lower(): v for k, v in self.headers.items()})
            out = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("content-type", "application/x-protobuf")
            self.send_header("content-length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver = Receiver(url=f"http://127.0.0.1:{server.server_address[1]}")
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return receiver, server
