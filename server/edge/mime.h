/*
 * The MIME types static routes answer with: h2o's built-in table, then the
 * system's /etc/mime.types (Debian package media-types) over it, so a type
 * the distribution knows is named the way the distribution names it.
 */
#ifndef WEFT_EDGE_MIME_H
#define WEFT_EDGE_MIME_H

#include "base/h2o_glue.h"

#define WEFT_MIME_TYPES "/etc/mime.types"

/**
 * A new map (h2o reference-counted: h2o_mem_release_shared frees it) from
 * `file`; a missing file leaves h2o's table alone. Control thread.
 */
h2o_mimemap_t *weft_mime_load(const char *file);

#endif
