#!/usr/bin/python3
"""A small OpenTelemetry collector and traced upstream for the trace tests.

Prints "port N" once it listens on 127.0.0.1. Paths:
  POST /v1/traces        takes an OTLP/HTTP JSON export (must parse as JSON
                         and be sent as application/json), answers 200 {}
  POST /slow/v1/traces   a collector that never answers: waits until its
                         client (weft's exporter) gives up and closes
  POST /flaky/v1/traces  answers 503 to every other POST, starting with the
                         first (a collector in trouble for a moment)
  POST /refuse/v1/traces answers 400 to every POST (counted as "refused")
  GET  /spans            {"posts":N, "bad":B, "docs":[every export body]}
  GET  /stats            {"posts":N, "bad":B, "hanging":H, "unavailable":U, "refused":R}
  GET  /echo             the upstream weft calls: "traceparent=V\\ntracestate=V\\n"
                         ("(none)" for a header that is absent)
"""
import json
import select
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

lock = threading.Lock()
state = {"posts": 0, "bad": 0, "hanging": 0, "unavailable": 0, "refused": 0, "flaky": 0, "docs": []}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def send(self, status, body, ctype="application/json"):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/echo":
            text = "traceparent=%s\ntracestate=%s\n" % (
                self.headers.get("traceparent", "(none)"),
                self.headers.get("tracestate", "(none)"),
            )
            return self.send(200, text.encode(), "text/plain")
        with lock:
            if self.path == "/spans":
                return self.send(200, json.dumps({"posts": state["posts"], "bad": state["bad"],
                                                  "docs": state["docs"]}).encode())
            if self.path == "/stats":
                return self.send(200, json.dumps({k: state[k] for k in ("posts", "bad", "hanging", "unavailable", "refused")}).encode())
        self.send(404, b"{}")

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path == "/slow/v1/traces":
            with lock:
                state["hanging"] += 1
            try:
                while True:
                    readable, _, _ = select.select([self.connection], [], [], 3600)
                    if readable and not self.connection.recv(4096):
                        break
            except OSError:
                pass
            with lock:
                state["hanging"] -= 1
            self.close_connection = True
            return
        if self.path == "/refuse/v1/traces":
            with lock:
                state["refused"] += 1
            return self.send(400, b"{}")
        if self.path == "/flaky/v1/traces":
            with lock:
                state["flaky"] += 1
                down = state["flaky"] % 2 == 1
                if down:
                    state["unavailable"] += 1
            if down:
                return self.send(503, b"{}")
        elif self.path != "/v1/traces":
            return self.send(404, b"{}")
        try:
            doc = json.loads(body)
            ok = self.headers.get("Content-Type", "").startswith("application/json")
        except ValueError:
            doc, ok = None, False
        with lock:
            if ok:
                state["posts"] += 1
                state["docs"].append(doc)
            else:
                state["bad"] += 1
        self.send(200 if ok else 400, b"{}")


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass


def main():
    srv = Server(("127.0.0.1", 0), Handler)
    print("port %d" % srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
