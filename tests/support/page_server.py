#!/usr/bin/python3
"""Serves DIR on 127.0.0.1 at an ephemeral port: another origin than weft's.

usage: page_server.py DIR

Writes the port to DIR/port (through a rename, so a reader never sees half
of it) once it listens, then serves until killed.
"""
import functools
import http.server
import os
import sys


def main():
    root = sys.argv[1]
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=root)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    tmp = os.path.join(root, ".port.tmp")
    with open(tmp, "w") as f:
        f.write("%d\n" % server.server_address[1])
    os.rename(tmp, os.path.join(root, "port"))
    server.serve_forever()


if __name__ == "__main__":
    main()
