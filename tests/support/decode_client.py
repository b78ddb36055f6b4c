#!/usr/bin/python3
"""An HTTP/1.1 client that decompresses as it reads, for the compression tests.

usage: decode_client.py PORT PATH ACCEPT-ENCODING [first-event] [METHOD]

Sends GET PATH with exactly the Accept-Encoding given ("-" sends none) and
prints the response's status line, its headers (lower-case names), a blank
line and the body decoded per Content-Encoding (gzip, br, zstd or none). With
"first-event" it stops as soon as the decoded body holds one whole
Server-Sent Event (a blank line), which it can only do if the server flushed
that event's compressed bytes on their own: it never waits for the stream to
end. Every read has a 20 s deadline; exit status 2 on a timeout or an error.
"""
import http.client
import sys
import zlib

import brotli
import zstandard


def decoder(encoding):
    if encoding in (None, "", "identity"):
        return lambda b: b
    if encoding == "gzip":
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        return d.decompress
    if encoding == "br":
        d = brotli.Decompressor()
        return d.process
    if encoding == "zstd":
        d = zstandard.ZstdDecompressor().decompressobj()
        return d.decompress
    raise SystemExit("unknown content-encoding %r" % encoding)


def main():
    port, path, ae = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    first_event = len(sys.argv) > 4 and sys.argv[4] == "first-event"
    method = sys.argv[5] if len(sys.argv) > 5 else "GET"
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    headers = {} if ae == "-" else {"Accept-Encoding": ae}
    conn.request(method, path, headers=headers)
    resp = conn.getresponse()
    out = ["%d" % resp.status]
    for name, value in resp.getheaders():
        out.append("%s: %s" % (name.lower(), value))
    decode = decoder(resp.getheader("content-encoding"))
    body = b""
    raw = 0
    while True:
        chunk = resp.read1(65536) if method != "HEAD" else b""
        if not chunk:
            break
        raw += len(chunk)
        body += decode(chunk)
        if first_event and b"\n\n" in body:
            break
    out.append("x-raw-bytes: %d" % raw)
    sys.stdout.write("\n".join(out) + "\n\n")
    sys.stdout.write(body.decode("utf-8", "replace"))
    sys.stdout.flush()
    conn.close()


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # a timeout or a broken stream: the test reports it
        sys.stderr.write("decode_client: %r\n" % (e,))
        sys.exit(2)
