/*
 * Small static answers over HTTP/1 in one write. h2o's file handler hands
 * the body over as a vector the socket may sendfile(): the head goes out in
 * one sendmsg, then the body in a sendfile of its own, two segments and two
 * wake-ups of the client for a 5-byte file. For a body of at most
 * WEFT_STATIC_ONE_WRITE_MAX bytes weft lets h2o read the file into its write
 * buffer instead (the path it takes under TLS), and head and body leave in
 * one write. Larger bodies keep sendfile's zero copy; HTTP/2 frames copy
 * the body in any case.
 */
#ifndef WEFT_EDGE_STATIC_WRITE_H
#define WEFT_EDGE_STATIC_WRITE_H

#include "base/h2o_glue.h"

#define WEFT_STATIC_ONE_WRITE_MAX 16384

/** Before h2o's file handler runs on an HTTP/1 request: its answer, if small, is written with its head. */
void weft_static_one_write(h2o_req_t *req);

#endif
