#!/usr/bin/python3
"""Request bodies sent and never ended (issue 44, item 5;
tests/integration/bodylife.c).

    body_flood.py PORT PATH CONNS STREAMS BYTES [raw]

CONNS HTTP/2 connections (prior knowledge), STREAMS POSTs to PATH on each,
every one sending BYTES of body and never ending it: as far as flow control
lets it, or with "raw" all of it regardless of the windows the server gave
(frames written by hand: python3-h2 would refuse). Prints a line per stream
the server answered, "answered STATUS", and "goaway CODE" when it ends a
connection, as they come; "sent N" once as much as the server will take is
out (nothing more moved for 2 s: flow control, or every connection closed;
not a wait the test relies on), with its pid: "sent N PID"; then holds the
connections until SIGTERM (or 60 s) and prints "done".
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

CHUNK = 16384


def raw(port, path, conns, streams, nbytes):
    """Every byte of every body, whatever the windows; the server's GOAWAY (or reset) ends a connection."""
    from hyperframe.frame import DataFrame, Frame, GoAwayFrame, HeadersFrame, SettingsFrame
    import hpack

    peers = []
    for _ in range(conns):
        s = socket.create_connection(("127.0.0.1", port))
        enc = hpack.Encoder()
        out = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + SettingsFrame(0).serialize()
        for i in range(streams):
            block = enc.encode([(":method", "POST"), (":path", path), (":scheme", "http"), (":authority", "x")])
            out += HeadersFrame(1 + 2 * i, block, flags=["END_HEADERS"]).serialize()
        s.sendall(out)
        peers.append({"sock": s, "in": b"", "open": True})
    sent, chunk = 0, b"x" * CHUNK
    for at in range(0, nbytes, CHUNK):
        for p in peers:
            if not p["open"]:
                continue
            try:
                for i in range(streams):
                    p["sock"].sendall(DataFrame(1 + 2 * i, chunk[: min(CHUNK, nbytes - at)]).serialize())
                    sent += min(CHUNK, nbytes - at)
            except OSError:
                p["open"] = False
            while p["open"] and select.select([p["sock"]], [], [], 0)[0]:
                try:
                    data = p["sock"].recv(65536)
                except OSError:
                    data = b""
                if not data:
                    p["open"] = False
                p["in"] += data
                while len(p["in"]) >= 9:
                    f, length = Frame.parse_frame_header(memoryview(p["in"][:9]))
                    if len(p["in"]) < 9 + length:
                        break
                    f.parse_body(memoryview(p["in"][9 : 9 + length]))
                    p["in"] = p["in"][9 + length :]
                    if isinstance(f, GoAwayFrame):
                        print("goaway %d" % f.error_code, flush=True)
        if not any(p["open"] for p in peers):
            break
    print("sent %d %d" % (sent, os.getpid()), flush=True)
    signal.sigtimedwait({signal.SIGTERM}, 60)
    for p in peers:
        p["sock"].close()
    print("done", flush=True)


def main():
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    port, path, conns, streams, nbytes = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    if sys.argv[6:] == ["raw"]:
        return raw(port, path, conns, streams, nbytes)
    peers = []
    for _ in range(conns):
        s = socket.create_connection(("127.0.0.1", port))
        c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
        c.initiate_connection()
        left = {}
        for i in range(streams):
            sid = 1 + 2 * i
            c.send_headers(sid, [(":method", "POST"), (":path", path), (":scheme", "http"), (":authority", "x")])
            left[sid] = nbytes
        s.sendall(c.data_to_send())
        s.setblocking(False)
        peers.append((s, c, left))
    sent, reported, idle_since = 0, False, time.monotonic()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        moved = False
        for s, c, left in peers:
            for sid, n in left.items():
                if n == 0:
                    continue
                try:
                    k = min(n, CHUNK, c.local_flow_control_window(sid), c.max_outbound_frame_size)
                except (h2.exceptions.StreamClosedError, KeyError):
                    left[sid] = 0
                    continue
                if k > 0:
                    c.send_data(sid, b"x" * k)
                    left[sid] -= k
                    sent += k
                    moved = True
            out = c.data_to_send()
            if out:
                s.setblocking(True)
                try:
                    s.sendall(out)
                except OSError:
                    pass
                s.setblocking(False)
        socks = [p[0] for p in peers]
        if reported and signal.sigtimedwait({signal.SIGTERM}, 0) is not None:
            break
        for s in select.select(socks, [], [], 0.05)[0]:
            _, c, left = next(p for p in peers if p[0] is s)
            try:
                data = s.recv(65536)
            except (BlockingIOError, ConnectionResetError):
                continue
            if not data:
                continue
            for ev in c.receive_data(data):
                if isinstance(ev, h2.events.ResponseReceived):
                    print("answered %s" % dict(ev.headers)[":status"], flush=True)
                elif isinstance(ev, h2.events.DataReceived):
                    c.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
                elif isinstance(ev, h2.events.WindowUpdated):
                    moved = True
                elif isinstance(ev, h2.events.StreamReset):
                    left[ev.stream_id] = 0
        if moved:
            idle_since = time.monotonic()
        elif not reported and time.monotonic() - idle_since > 2:
            print("sent %d %d" % (sent, os.getpid()), flush=True)
            reported = True
    for s, _, _ in peers:
        s.close()
    print("done", flush=True)


if __name__ == "__main__":
    main()
