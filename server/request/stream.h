/*
 * Streamed responses (plugin API 1.1): the head goes out at the first flush,
 * then each flush hands the bytes written since to h2o (HTTP/1.1 chunked,
 * HTTP/2 DATA frames) and reports back once the connection took them, so a
 * producer never runs ahead of its client. Loop thread, except res_sse.
 */
#ifndef WEFT_STREAM_H
#define WEFT_STREAM_H

#include "request/request.h"

/**
 * Sends what r's body holds as the next part; starts the response first if
 * needed. WEFT_OK: r->flush_done(r, rc) runs once the connection took it
 * (WEFT_OK) or the client left (WEFT_CANCELLED), possibly before this
 * returns; set it before calling. Else the rc at once (no callback).
 */
int weft_stream_send(weft_req *r);
/** Ends a streamed response with what r's body still holds (completion). */
void weft_stream_finish(weft_req *r);
/** Appends one Server-Sent Event; id and event may be NULL. Any thread. */
int weft_stream_res_sse(weft_req *r, const char *id, const char *event, const char *data);

#endif
