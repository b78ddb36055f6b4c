#!/usr/bin/python3
"""Hostile WebSocket clients for the tests (standard library only).

  ws_flood.py ping PORT PATH MB
      sends 125-byte pings, MB megabytes of them, and never reads a pong;
      prints "closed=<1 if the server closed the socket> sent_mb=<sent>"
  ws_flood.py silent PORT PATH N SIZE COUNT
      N members join and never read (small receive buffers); one more
      member sends COUNT text messages of SIZE bytes and reads what comes
      back; prints "sent=<messages sent> slow_closed=<how many members the
      server closed as slow readers meanwhile, from its /metrics>"
Every step is bounded (socket timeouts; the whole run by 120 s).
"""
import base64
import os
import select
import socket
import sys
import time


def handshake(port, path, rcvbuf=0):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall(("GET %s HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n" % (path, key)).encode())
    head = b""
    while b"\r\n\r\n" not in head:
        d = s.recv(4096)
        if not d:
            raise SystemExit("handshake: closed")
        head += d
    if b" 101 " not in head.split(b"\r\n", 1)[0]:
        raise SystemExit("handshake: " + head.split(b"\r\n", 1)[0].decode())
    return s


def frame(opcode, payload):
    mask = os.urandom(4)
    n = len(payload)
    if n < 126:
        hdr = bytes([0x80 | opcode, 0x80 | n])
    elif n < 65536:
        hdr = bytes([0x80 | opcode, 0x80 | 126]) + n.to_bytes(2, "big")
    else:
        hdr = bytes([0x80 | opcode, 0x80 | 127]) + n.to_bytes(8, "big")
    return hdr + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def gone(s):
    """The server closed (or reset) the socket: EOF pending or an error."""
    try:
        r, _, _ = select.select([s], [], [], 0)
        if not r:
            return False
        s.setblocking(False)
        while True:
            d = s.recv(1 << 20)
            if not d:
                return True
    except BlockingIOError:
        return False
    except OSError:
        return True


def ping(port, path, mb):
    s = handshake(port, path)
    batch = frame(0x9, b"p" * 125) * 512  # 64 KiB of pings per send
    sent, closed = 0, False
    deadline = time.monotonic() + 60
    while sent < mb * 1024 * 1024 and time.monotonic() < deadline:
        try:
            s.sendall(batch)
        except (OSError, socket.timeout):
            closed = True
            break
        sent += len(batch)
    end = time.monotonic() + 5
    while not closed and time.monotonic() < end:
        closed = gone(s)  # it may have closed without our sends noticing yet
        if not closed:
            time.sleep(0.05)  # poll interval (kind (a))
    print("closed=%d sent_mb=%.1f" % (int(closed), sent / 1048576.0))


def silent(port, path, n, size, count):
    base = metric(port, "weft_websocket_slow_closed_total")
    members = [handshake(port, path, rcvbuf=4096) for _ in range(n)]
    sender = handshake(port, path)
    msg = frame(0x1, b"m" * size)
    sent = 0
    deadline = time.monotonic() + 120
    for _ in range(count):
        if time.monotonic() > deadline:
            break
        try:
            sender.sendall(msg)
        except OSError:
            break
        sent += 1
        # The sender reads its own copies so that it is never the slow one.
        end = time.monotonic() + 10
        got = 0
        while got < size and time.monotonic() < end:
            r, _, _ = select.select([sender], [], [], 0.5)
            if r:
                d = sender.recv(1 << 20)
                if not d:
                    break
                got += len(d)
    # The members are still connected, unread. The server closes a slow
    # reader while it sends to it, so its count is complete by now.
    closed = metric(port, "weft_websocket_slow_closed_total")
    print("sent=%d slow_closed=%d" % (sent, closed - base))
    for m in members:
        m.close()


def metric(port, name):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    data = b""
    while True:
        d = s.recv(65536)
        if not d:
            break
        data += d
    s.close()
    for line in data.decode(errors="replace").splitlines():
        if line.startswith(name + " "):
            return int(float(line.split()[1]))
    return 0


def main():
    mode = sys.argv[1]
    if mode == "ping":
        ping(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]))
    elif mode == "silent":
        silent(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]))
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
