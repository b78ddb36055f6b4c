/*
 * The access log, written by weft rather than by h2o's file handle, so that
 * an operator's logrotate can move it away and weft reopens it on SIGUSR1
 * or a reload (h2o 2.2.5's handle keeps its descriptor private).
 */
#ifndef WEFT_ACCESSLOG_H
#define WEFT_ACCESSLOG_H

#include <stddef.h>

#include "base/h2o_glue.h"

/**
 * Opens `file` (appending, created 0640) and logs every request of `path`
 * to it in `fmt` (h2o's log format, Apache escaping). -1 with `why` when
 * the file or the format is refused.
 */
int weft_accesslog_open(h2o_pathconf_t *path, const char *file, const char *fmt, char *why, size_t size);
/**
 * Logs the requests of one more path to the same file (after a successful
 * open): the host's fallback path, where h2o answers what it refuses before
 * any handler (400 for a broken request). -1 without memory.
 */
int weft_accesslog_cover(h2o_pathconf_t *path);
/**
 * Notes when `req` reached weft, for the duration the access log ends its
 * line with. An answerer (request/respond.h) to register first on a path
 * that is logged; it never answers (returns 0). Loop thread.
 */
int weft_accesslog_stamp(h2o_req_t *req);
/** Opens the same path again, in place of the descriptor the loops write to (logrotate). Control thread. */
int weft_accesslog_reopen(char *why, size_t size);
/** Closes it once the loops have stopped. */
void weft_accesslog_close(void);

#endif
