#!/usr/bin/python3
"""HTTP/2 client for the drain test: one TLS connection, one GET of PATH.

usage: h2_drain.py PORT PATH
Prints "sent" once the request is written, then, when the stream ends or the
connection closes, one line "goaway=<1 if the server sent GOAWAY> status=<the
answer's status, 0 if none>". Debian's python3-h2; run with /usr/bin/python3.
The whole exchange is bounded by 30 s.
"""
import sys

import h2.config
import h2.connection

sys.path.insert(0, __import__("os").path.dirname(__file__))
from h2frames import FrameScanner, connect_tls_h2, read_until  # noqa: E402


def main():
    port, path = int(sys.argv[1]), sys.argv[2]
    sock = connect_tls_h2(port)
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    sid = conn.get_next_available_stream_id()
    conn.send_headers(sid, [(":method", "GET"), (":path", path), (":scheme", "https"), (":authority", "localhost")],
                      end_stream=True)
    sock.sendall(conn.data_to_send())
    print("sent", flush=True)
    frames = FrameScanner()
    read_until(sock, frames, lambda: sid in frames.ended, 30)
    print("goaway=%d status=%d" % (int(frames.goaway), frames.status.get(sid, 0)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
