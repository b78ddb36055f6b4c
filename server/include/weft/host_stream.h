/*
 * weft/host_stream.h — the `stream` group: sending the response part by
 * part (HTTP/1.1 chunked, HTTP/2 DATA frames) and Server-Sent Events. The
 * `cb` convention is the one of weft/host_sync.h.
 */
#ifndef WEFT_HOST_STREAM_H
#define WEFT_HOST_STREAM_H

#include <weft/types.h>

#define WEFT_HOST_STREAM_VERSION 1u

typedef struct weft_host_stream {
    uint32_t struct_size;
    uint32_t version; /**< WEFT_HOST_STREAM_VERSION of the running host */
    /**
     * Sends what response->write/writef and sse appended since the last
     * flush as the next part of the body; the first flush sends the status
     * and headers (set them first). Waits until the connection took the
     * part, so memory per stream stays at one part. WEFT_OK; WEFT_CANCELLED
     * once the client left (stop producing and return); WEFT_ERROR on
     * misuse (blocking style from a reactive handler). With a callback: no
     * writes to the body until it ran.
     */
    weft_rc (*flush)(weft_req *req, weft_callback cb, void *arg);
    /**
     * Appends one Server-Sent Event ("id: …", "event: …", one "data: …" per
     * line of `data`, blank line); id and event may be NULL and must not
     * contain CR or LF (WEFT_ERROR). Before the first flush it also sets
     * content-type text/event-stream and cache-control no-cache unless a
     * content type was set. Flush to send it.
     */
    weft_rc (*sse)(weft_req *req, const char *id, const char *event, const char *data);
} weft_host_stream;

#endif
