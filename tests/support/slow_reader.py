#!/usr/bin/python3
"""Clients that ask and never read (issue 30, item 7; tests/integration/slowreader.c).

    slow_reader.py h1 PORT PATH CONNS           CONNS HTTP/1.1 connections, one GET each
    slow_reader.py h2 PORT PATH CONNS STREAMS   CONNS HTTP/2 (prior knowledge) connections, STREAMS GETs each

Each socket's receive buffer is made small, the requests are sent, and
nothing is ever read. Prints "ready PID" once every request is out, then holds
the connections until SIGTERM (or a 120 s deadline, so that a failed test
leaves no client behind), and prints how many the server closed meanwhile.
"""
import os
import signal
import socket
import sys
import time

import h2.config
import h2.connection


def connect(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", port))
    return s


def h1(port, path):
    s = connect(port)
    s.sendall(("GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % path).encode())
    return s


def h2c(port, path, streams):
    s = connect(port)
    c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
    c.initiate_connection()
    for i in range(streams):
        c.send_headers(1 + 2 * i, [(":method", "GET"), (":path", path), (":scheme", "http"), (":authority", "x")],
                       end_stream=True)
    s.sendall(c.data_to_send())
    return s


def closed(s):
    """True when the server ended the connection: what it had queued is read
    (for at most 0.3 s, poll of the socket) up to the end of the stream."""
    end = time.monotonic() + 0.3
    try:
        while time.monotonic() < end:
            s.settimeout(max(0.01, end - time.monotonic()))
            if s.recv(1 << 20) == b"":
                return True
    except socket.timeout:
        return False
    except OSError:
        return True
    return False


def main():
    mode, port, path, conns = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    streams = int(sys.argv[5]) if len(sys.argv) > 5 else 1
    socks = [h2c(port, path, streams) if mode == "h2" else h1(port, path) for _ in range(conns)]
    print("ready %d" % os.getpid(), flush=True)
    stop = []
    signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
    signal.alarm(120)
    while not stop:
        signal.pause()
    print("closed=%d of %d" % (sum(closed(s) for s in socks), conns), flush=True)


if __name__ == "__main__":
    main()
