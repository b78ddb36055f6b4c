/*
 * What the HTTP/2 abuse tests share (suite only, not in the test kit): a
 * TLS listener's certificate and port, and the attacking client,
 * tests/support/rapid_reset.py (Debian's python3-h2) on one connection.
 */
#ifndef WEFT_TEST_H2ATTACK_H
#define WEFT_TEST_H2ATTACK_H

#include "harness.h"

/** A self-signed server.crt and server.key (CN localhost) in `dir`, for a listener's `tls` group. */
void wt_tls_cert(const char *dir);
/** The port of the server's first https:// listener (from its log). */
int wt_tls_port(const wt_server *s);

typedef struct wt_h2_run {
    int sent;   /* HEADERS (and RST_STREAM) written before the client stopped */
    int closed; /* the server closed the connection or sent GOAWAY */
    int goaway; /* it sent GOAWAY */
    double ms;  /* how long the client ran */
} wt_h2_run;

/**
 * `n` streams of GET `path` on one HTTP/2 connection to 127.0.0.1:`port`:
 * each reset at once (`mode` ""), or left open and never read past the
 * flow-control window ("keep"). The client stops when the server closes.
 */
void wt_h2_streams(int port, const char *path, int n, const char *mode, wt_h2_run *out);

#endif
