#!/usr/bin/python3
"""HPACK bomb client for the tests: on one TLS connection, STREAMS requests
for PATH, each carrying one 4,000-byte header COPIES times. The header block
is written by hand: the value once, as a literal the server adds to its
dynamic table (it fits the default 4,096-byte table), then one index byte per
copy, so each request is about 4 KB + COPIES bytes on the wire but decodes to
4 KB * COPIES.

usage: hpack_bomb.py PORT PATH STREAMS COPIES
Prints one line "statuses=<sorted distinct :status values> streams=<answered>
bytes=<bytes sent> goaway=<1 if the server sent GOAWAY>". Run with /usr/bin/python3 (Debian's python3-hpack).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from h2frames import FrameScanner, connect_tls_h2, read_until  # noqa: E402

HEADERS, CONTINUATION, SETTINGS = 0x1, 0x9, 0x4
END_STREAM, END_HEADERS = 0x1, 0x4
MAX_FRAME = 16384


def frame(ftype, flags, sid, payload):
    return len(payload).to_bytes(3, "big") + bytes([ftype, flags]) + sid.to_bytes(4, "big") + payload


def literal(s):
    b = s.encode()
    assert len(b) < 127  # one-byte length prefix, no Huffman
    return bytes([len(b)]) + b


def long_literal(b):
    # HPACK integer with a 7-bit prefix, no Huffman.
    n, out = len(b), bytearray()
    if n < 127:
        out.append(n)
    else:
        out.append(127)
        n -= 127
        while n >= 128:
            out.append((n % 128) + 128)
            n //= 128
        out.append(n)
    return bytes(out) + b


def block(path, copies, first):
    # :method GET (static 2), :scheme https (static 7), :path and :authority
    # as literals without indexing (name indexes 4 and 1).
    b = bytearray(b"\x82\x87" + b"\x04" + literal(path) + b"\x01" + literal("localhost"))
    if first:  # literal with incremental indexing, new name: enters the table at index 62
        b += b"\x40" + literal("x-bomb") + long_literal(b"b" * 4000)
        copies -= 1
    b += b"\xbe" * copies  # indexed field 62 (0x80 | 62)
    return bytes(b)


def main():
    port, path, streams, copies = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    sock = connect_tls_h2(port)
    out = bytearray(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(SETTINGS, 0, 0, b""))
    sids = []
    for i in range(streams):
        sid = 1 + 2 * i
        hb = block(path, copies, i == 0)
        parts = [hb[j : j + MAX_FRAME] for j in range(0, len(hb), MAX_FRAME)]
        for k, part in enumerate(parts):
            last = END_HEADERS if k == len(parts) - 1 else 0
            if k == 0:
                out += frame(HEADERS, END_STREAM | last, sid, part)
            else:
                out += frame(CONTINUATION, last, sid, part)
        sids.append(sid)
    sent = len(out)
    try:
        sock.sendall(out)
    except OSError:
        pass  # the server may end the connection before it read everything
    frames = FrameScanner()
    read_until(sock, frames, lambda: all(s in frames.ended for s in sids), 30)
    statuses = sorted(set(frames.status.get(s, 0) for s in sids))
    answered = sum(1 for s in sids if s in frames.ended)
    print("statuses=%s streams=%d bytes=%d goaway=%d" % (",".join(map(str, statuses)), answered, sent, int(frames.goaway)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
