"""Reads an HTTP/2 server's frames without python3-h2's state machine, which
refuses every frame after a GOAWAY (RFC 9113 lets a server finish the
streams it accepted after sending one: that is what the tests check); and
what the tests' HTTP/2 clients share: the TLS connection, the read loop."""
import select
import socket
import ssl
import time

import hpack


def connect_tls_h2(port):
    """A TLS connection to 127.0.0.1:port offering only h2 (the test
    servers' certificates are self-signed: not verified)."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.set_alpn_protocols(["h2"])
    return ctx.wrap_socket(socket.create_connection(("127.0.0.1", port)), server_hostname="localhost")


def read_until(sock, frames, done, seconds):
    """Feeds what the server sends to `frames` until done() holds, the
    connection closes, or `seconds` pass (a deadline, never a fixed wait)."""
    deadline = time.monotonic() + seconds
    while not done() and time.monotonic() < deadline:
        if not select.select([sock], [], [], 0.5)[0]:
            continue
        try:
            data = sock.recv(65536)
        except (ssl.SSLWantReadError, BlockingIOError):
            continue
        except OSError:
            return
        if not data:
            return
        frames.feed(data)


class FrameScanner:
    GOAWAY, HEADERS, DATA, CONTINUATION = 0x7, 0x1, 0x0, 0x9
    END_STREAM, END_HEADERS, PADDED, PRIORITY = 0x1, 0x4, 0x8, 0x20

    def __init__(self):
        self.buf = b""
        self.goaway = False
        self.status = {}  # stream id -> :status
        self.ended = set()  # stream ids the server ended
        self._decoder = hpack.Decoder()
        self._block = {}

    def feed(self, data):
        self.buf += data
        while len(self.buf) >= 9:
            length = int.from_bytes(self.buf[0:3], "big")
            if len(self.buf) < 9 + length:
                return
            ftype, flags = self.buf[3], self.buf[4]
            sid = int.from_bytes(self.buf[5:9], "big") & 0x7FFFFFFF
            payload, self.buf = self.buf[9 : 9 + length], self.buf[9 + length :]
            if ftype == self.GOAWAY:
                self.goaway = True
            elif ftype in (self.HEADERS, self.CONTINUATION):
                if ftype == self.HEADERS:
                    if flags & self.PADDED:
                        payload = payload[1 : len(payload) - payload[0]]
                    if flags & self.PRIORITY:
                        payload = payload[5:]
                    if flags & self.END_STREAM:
                        self.ended.add(sid)
                self._block[sid] = self._block.get(sid, b"") + payload
                if flags & self.END_HEADERS:
                    for name, value in self._decoder.decode(self._block.pop(sid)):
                        if name in (":status", b":status"):
                            self.status.setdefault(sid, int(value))
            elif ftype == self.DATA and flags & self.END_STREAM:
                self.ended.add(sid)
