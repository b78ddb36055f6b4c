/*
 * HTTP/1.1 over a raw socket, for tests that must send exactly their bytes:
 * libcurl normalises paths, refuses some methods and adds headers. Each
 * request says `Connection: close` and the answer is read until the server
 * closes.
 */
#ifndef WEFT_TEST_RAWHTTP_H
#define WEFT_TEST_RAWHTTP_H

#include <stddef.h>

typedef struct wt_raw_resp {
    long status; /* 0: the connection closed without an answer */
    char *head;  /* status line and headers */
    char *body;
    size_t len; /* of the whole answer */
} wt_raw_resp;

void wt_raw_free(wt_raw_resp *r);
/** A connected socket to 127.0.0.1:port; fails the test otherwise. */
int wt_raw_connect(int port);
/**
 * Sends `len` bytes and reads the answer until the server closes, within
 * `timeout_ms` (or fails the test). Sending and reading interleave: a server
 * refusing an oversized request answers and closes while the client is still
 * writing, and the answer must not be lost to the reset that follows.
 */
void wt_raw_send(int port, const char *req, size_t len, wt_raw_resp *out, int timeout_ms);
/**
 * "METHOD TARGET HTTP/1.1" + Host + Connection: close + `headers` (each line
 * ending in \r\n) + Content-Length when `body` is given. malloc'd; *len is its size.
 */
char *wt_raw_build(const char *method, const char *target, const char *headers, const char *body, size_t body_len,
                   size_t *len);
/** wt_raw_build + wt_raw_send (20 s), `body` a string or NULL. */
void wt_raw_http(int port, const char *method, const char *target, const char *headers, const char *body,
                 wt_raw_resp *out);
/** A header's value (case-insensitive name) copied into out; NULL if absent. */
const char *wt_raw_header(const wt_raw_resp *r, const char *name, char *out, size_t size);

#endif
