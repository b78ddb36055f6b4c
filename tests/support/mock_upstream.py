#!/usr/bin/python3
"""A mock HTTP/1.1 upstream for the outbound-call tests.

Prints "port N" once it listens on 127.0.0.1 (port 0: any free one). Paths:
  /persons/{id}                 {"id":id} (404 for id 404)
  /delay/{ms}/persons/{id}      the same after ms milliseconds
  /hang/...                     never answers; waits for the client to close
  /reset/...                    closes the connection with a TCP reset
  /status/{code}/...            answers that status
  /big/{bytes}/...              a body of that many bytes
  /stats                        {"connections":N,"requests":M,"closed":C,
                                "hanging":H,"hang_closed":K}: connections
                                accepted, requests, connections ended,
                                /hang requests waiting now, and
                                /hang requests whose client closed (how a
                                test sees weft cancel a call)
Keep-alive, Content-Length framing, one thread per connection.
With --tls CERT KEY it speaks https, on 127.0.0.1 and (if it can) on ::1 at
the same port, so https://localhost:N works whichever address resolves.
"""
import json
import select
import socket
import ssl
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

lock = threading.Lock()
counts = {"connections": 0, "requests": 0, "closed": 0, "hanging": 0, "hang_closed": 0, "posts": 0}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self):
        super().setup()
        with lock:
            counts["connections"] += 1

    def finish(self):
        try:
            super().finish()
        finally:
            with lock:
                counts["closed"] += 1

    def hang(self):
        """Answers nothing; returns once the client closed the connection."""
        with lock:
            counts["hanging"] += 1
        try:
            while True:
                readable, _, _ = select.select([self.connection], [], [], 3600)
                if readable and not self.connection.recv(4096):
                    break
        except OSError:
            pass
        with lock:
            counts["hanging"] -= 1
            counts["hang_closed"] += 1
        self.close_connection = True

    def log_message(self, fmt, *args):
        pass

    def send(self, status, body, ctype="application/json"):
        self.served = getattr(self, "served", 0) + 1
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        with lock:
            counts["posts"] += 1
        self.do_GET()

    def do_GET(self):
        with lock:
            counts["requests"] += 1
        parts = [p for p in self.path.split("?")[0].split("/") if p]
        status = 200
        while parts:
            head = parts[0]
            if head == "stats":
                with lock:
                    return self.send(200, json.dumps(counts).encode())
            if head == "delay":
                # the scenario: a slow upstream (weft's deadline or the client's timeout decides)
                time.sleep(int(parts[1]) / 1000.0)
                parts = parts[2:]
            elif head == "hang":
                return self.hang()
            elif head == "reset":
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.connection.close()
                self.close_connection = True
                return
            elif head == "stale":
                # a keep-alive connection closed by its idle timeout just as the next
                # request came in: every request after the first on a connection is dropped
                if getattr(self, "served", 0) > 0:
                    self.connection.shutdown(socket.SHUT_RDWR)
                    self.close_connection = True
                    return
                parts = parts[1:]
            elif head == "status":
                status = int(parts[1])
                parts = parts[2:]
            elif head == "big":
                return self.send(200, b"x" * int(parts[1]), "text/plain")
            elif head == "persons" and len(parts) == 2:
                pid = int(parts[1])
                if pid == 404:
                    return self.send(404, b'{"error":"not found"}')
                return self.send(status, json.dumps({"id": pid, "name": "p%d" % pid}).encode())
            else:
                break
        self.send(404, b'{"error":"no such mock path"}')


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024

    def handle_error(self, request, client_address):
        pass  # clients that hang up (timeouts, resets under test) are expected


class Server6(Server):
    address_family = socket.AF_INET6


def main():
    tls = None
    if len(sys.argv) == 4 and sys.argv[1] == "--tls":
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(sys.argv[2], sys.argv[3])
    srv = Server(("127.0.0.1", 0), Handler)
    servers = [srv]
    if tls is not None:
        try:
            servers.append(Server6(("::1", srv.server_address[1]), Handler))
        except OSError:
            pass
        for s in servers:
            s.socket = tls.wrap_socket(s.socket, server_side=True, do_handshake_on_connect=False)
    print("port %d" % srv.server_address[1], flush=True)
    for s in servers[1:]:
        threading.Thread(target=s.serve_forever, daemon=True).start()
    srv.serve_forever()


if __name__ == "__main__":
    main()
