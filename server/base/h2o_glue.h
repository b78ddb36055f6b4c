/*
 * The one place that includes h2o: the pinned upstream copy in
 * third_party/h2o (docs/DEPENDENCIES.md), built as a static library whose
 * defines (H2O_USE_LIBUV=0, brotli, zstd) come with its CMake target, so every
 * translation unit sees the same h2o. Nothing in here may leak into
 * weft/plugin.h: plugins never see an h2o type.
 */
#ifndef WEFT_H2O_GLUE_H
#define WEFT_H2O_GLUE_H

#include <h2o.h>
#include <h2o/httpclient.h>
#include <h2o/multithread.h>
#include <h2o/socket/evloop.h>
#include <h2o/version.h>
#include <h2o/websocket.h>
#include <string.h>

/*
 * The TCP socket under an HTTP/1 or HTTP/2 request, or NULL (HTTP/3, or the
 * connection is closing). h2o dropped conn->callbacks->get_socket after
 * 2.2.5; both of its TCP connection types (lib/http1.c's private
 * st_h2o_http1_conn_t and http2_internal.h's st_h2o_http2_conn_t) begin with
 * this prefix, which is what h2o's own upgrade path relies on too. Loop
 * thread; the socket stays h2o's: shut it down at most, never close it.
 */
typedef struct weft_h2o_tcp_conn {
    h2o_conn_t super;
    h2o_socket_t *sock;
} weft_h2o_tcp_conn;

static inline h2o_socket_t *weft_h2o_req_socket(h2o_req_t *req)
{
    if (req->conn == NULL || req->version >= 0x300)
        return NULL;
    return ((weft_h2o_tcp_conn *)req->conn)->sock;
}

#endif
