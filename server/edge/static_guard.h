/*
 * What a static route checks before h2o's file handler sees a request:
 * the path below the prefix decoded once, with no encoded slash (one file
 * name is never two segments), no NUL and no segment starting with '.'
 * (hidden files: .git, .env, .htpasswd); then every file h2o may open for
 * it (the file, the index files of a directory, their .br/.zst/.gz
 * siblings) resolved beneath the directory with openat2(RESOLVE_BENEATH),
 * so a symlink that leads out of it is refused, unless follow_symlinks.
 */
#ifndef WEFT_EDGE_STATIC_GUARD_H
#define WEFT_EDGE_STATIC_GUARD_H

#include <stddef.h>

#include "base/h2o_glue.h"

/**
 * Decodes `rest` (the raw path below the prefix: empty or starting with
 * '/') into `out` (at least len + 1 bytes). Returns the decoded length, or
 * -404 (encoded slash, hidden segment) or -400 (bad or NUL escape).
 */
long weft_static_decode(const char *rest, size_t len, char *out);

/**
 * 1 when a file h2o may open for the decoded relative path `rel` (no
 * leading '/'; a trailing '/' asks for an index) leaves the directory open
 * as `rootfd` (real path `root`); 0 when none does and one is there; 2 when
 * none is there (h2o finds none either; a file created later is checked
 * then, so this answer is not worth remembering). `index` is NULL-terminated; `variants` says to check
 * the precompressed siblings too.
 */
int weft_static_escapes(int rootfd, const char *root, const char *rel, size_t rel_len, char *const *index, int variants);

#endif
