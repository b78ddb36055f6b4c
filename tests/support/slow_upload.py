#!/usr/bin/python3
"""Uploads that the server answers before their bodies end (issue 44, item 1;
tests/integration/bodylife.c).

    slow_upload.py h1|h2 PORT PATH N MODE [INTERVAL_MS]

N requests (h1: N HTTP/1.1 connections; h2: N streams on one HTTP/2
connection, prior knowledge) POST to PATH, each with a body that never ends:

    trickle  one body byte every INTERVAL_MS (h1: chunked), and on after the
             answer, until the server ends the request
    early    the head and 3 body bytes (h1: of a Content-Length of 100000),
             then nothing until the answer, then 3 bytes more; waits for the
             end
    leave    the head and 3 body bytes; prints "ready PID", then closes
             every connection at SIGTERM (or 30 s)

Prints a line per request, "I status=S answer_ms=A end=E end_ms=T": E is
"closed" (h1: the server closed the connection), "reset:CODE" (h2: the
server reset the stream, CODE its error code, 0 NO_ERROR) or "open" (still
going at the deadline, 30 s after the start); then "done".
"""
import os
import select
import signal
import socket
import sys
import time

import h2.config
import h2.connection
import h2.events
import h2.exceptions

DEADLINE_S = 30


class Req:
    def __init__(self):
        self.status = 0
        self.answer_ms = -1
        self.end = "open"
        self.end_ms = -1
        self.buf = b""

    def line(self, i):
        return "%d status=%d answer_ms=%d end=%s end_ms=%d" % (i, self.status, self.answer_ms, self.end, self.end_ms)


def hold():
    """Says it is ready, then waits for the test's SIGTERM (blocked since the start)."""
    print("ready %d" % os.getpid(), flush=True)
    signal.sigtimedwait({signal.SIGTERM}, DEADLINE_S)


def ms_since(t0):
    return int((time.monotonic() - t0) * 1000)


def h1(port, path, n, mode, interval):
    t0 = time.monotonic()
    socks, reqs = [], [Req() for _ in range(n)]
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port))
        if mode == "trickle":
            s.sendall(("POST %s HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" % path).encode())
        else:
            s.sendall(("POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\nabc" % path).encode())
        s.setblocking(False)
        socks.append(s)
    if mode == "leave":
        hold()
        for s in socks:
            s.close()
        return reqs
    next_byte = time.monotonic()
    while time.monotonic() - t0 < DEADLINE_S and any(r.end == "open" for r in reqs):
        live = [s for s, r in zip(socks, reqs) if r.end == "open"]
        wait = max(0.0, next_byte - time.monotonic()) if mode == "trickle" else 0.5
        for s in select.select(live, [], [], wait)[0]:
            r = reqs[socks.index(s)]
            try:
                data = s.recv(65536)
            except BlockingIOError:
                continue
            except ConnectionResetError:
                data = b""
            if not data:
                r.end, r.end_ms = "closed", ms_since(t0)
                continue
            r.buf += data
            if r.status == 0 and r.buf.startswith(b"HTTP/1.1 ") and len(r.buf) >= 12:
                r.status, r.answer_ms = int(r.buf[9:12]), ms_since(t0)
                if mode == "early":
                    try:
                        s.send(b"xyz")  # what a client that did not wait for the answer sends on
                    except OSError:
                        pass
        if mode == "trickle" and time.monotonic() >= next_byte:
            next_byte += interval / 1000.0
            for s, r in zip(socks, reqs):
                if r.end != "open":
                    continue
                try:
                    s.send(b"1\r\na\r\n")
                except BlockingIOError:
                    pass
                except OSError:
                    r.end, r.end_ms = "closed", ms_since(t0)
    return reqs


def h2c(port, path, n, mode, interval):
    t0 = time.monotonic()
    s = socket.create_connection(("127.0.0.1", port))
    c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
    c.initiate_connection()
    ids = [1 + 2 * i for i in range(n)]
    reqs = {sid: Req() for sid in ids}
    for sid in ids:
        c.send_headers(sid, [(":method", "POST"), (":path", path), (":scheme", "http"), (":authority", "x")])
        if mode != "trickle":
            c.send_data(sid, b"abc")
    s.sendall(c.data_to_send())
    if mode == "leave":
        hold()
        s.close()
        return [reqs[sid] for sid in ids]
    next_byte = time.monotonic()
    gone = False
    while not gone and time.monotonic() - t0 < DEADLINE_S and any(r.end == "open" for r in reqs.values()):
        wait = max(0.0, next_byte - time.monotonic()) if mode == "trickle" else 0.5
        if select.select([s], [], [], wait)[0]:
            data = s.recv(65536)
            if not data:
                gone = True
            for ev in c.receive_data(data) if data else []:
                r = reqs.get(getattr(ev, "stream_id", None))
                if isinstance(ev, h2.events.ResponseReceived) and r is not None:
                    r.status = int(dict(ev.headers)[":status"])
                    r.answer_ms = ms_since(t0)
                    if mode == "early":
                        try:
                            c.send_data(ev.stream_id, b"xyz")
                        except (h2.exceptions.StreamClosedError, h2.exceptions.FlowControlError):
                            pass
                elif isinstance(ev, h2.events.DataReceived):
                    c.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
                elif isinstance(ev, h2.events.StreamReset) and r is not None:
                    r.end, r.end_ms = "reset:%d" % ev.error_code, ms_since(t0)
        if mode == "trickle" and time.monotonic() >= next_byte:
            next_byte += interval / 1000.0
            for sid, r in reqs.items():
                if r.end == "open":
                    try:
                        c.send_data(sid, b"a")
                    except (h2.exceptions.StreamClosedError, h2.exceptions.FlowControlError):
                        pass
        try:
            s.sendall(c.data_to_send())
        except OSError:
            gone = True
    for r in reqs.values():
        if gone and r.end == "open":
            r.end, r.end_ms = "closed", ms_since(t0)
    return [reqs[sid] for sid in ids]


def main():
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    proto, port, path, n, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5]
    interval = int(sys.argv[6]) if len(sys.argv) > 6 else 500
    reqs = (h1 if proto == "h1" else h2c)(port, path, n, mode, interval)
    for i, r in enumerate(reqs):
        print(r.line(i))
    print("done", flush=True)


if __name__ == "__main__":
    main()
