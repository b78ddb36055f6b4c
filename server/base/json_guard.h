/*
 * What a JSON body must pass before a recursive parser sees it. jansson
 * recurses once per array or object level, up to 2048 of them, and a
 * coroutine runs on a small stack (coroutine.stack_size, 64 KiB by default):
 * a 2 KB body of '[' overflowed it and took the process down. The scan
 * counts brackets outside strings only; it judges nothing else (the parser
 * does) and never counts fewer levels than the parser would nest.
 */
#ifndef WEFT_JSON_GUARD_H
#define WEFT_JSON_GUARD_H

#include <stddef.h>

/** 1 when the arrays and objects of `text` (`len` bytes) nest more than `max_depth` deep. */
int weft_json_too_deep(const char *text, size_t len, int max_depth);
/**
 * 1 when the header value `value` (NULL: absent) names the media type `type`
 * (lower case, e.g. "application/json"), any case, blanks around it, with or
 * without parameters ("; charset=utf-8").
 */
int weft_media_type_is(const char *value, const char *type);

#endif
