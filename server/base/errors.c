#include "base/errors.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"

void weft_errors_add(weft_errors *e, const char *fmt, ...)
{
    char *msg = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&msg, fmt, ap);
    va_end(ap);
    if (n < 0)
        weft_fatal("out of memory");
    char **grown = realloc(e->msgs, (e->count + 1) * sizeof(*grown));
    if (grown == NULL)
        weft_fatal("out of memory");
    e->msgs = grown;
    e->msgs[e->count++] = msg;
}

void weft_errors_log(const weft_errors *e)
{
    for (size_t i = 0; i < e->count; i++)
        weft_log_error("%s", e->msgs[i]);
}

void weft_errors_clear(weft_errors *e)
{
    for (size_t i = 0; i < e->count; i++)
        free(e->msgs[i]);
    free(e->msgs);
    e->msgs = NULL;
    e->count = 0;
}

void weft_errors_truncate(weft_errors *e, size_t from)
{
    for (size_t i = from; i < e->count; i++)
        free(e->msgs[i]);
    if (from < e->count)
        e->count = from;
    if (e->count == 0) { /* as weft_errors_clear leaves it: nothing for the caller to free */
        free(e->msgs);
        e->msgs = NULL;
    }
}

char *weft_errors_join(const weft_errors *e, size_t from, size_t to)
{
    size_t len = 1;
    for (size_t i = from; i < to && i < e->count; i++)
        len += strlen(e->msgs[i]) + 2;
    char *out = malloc(len);
    if (out == NULL)
        weft_fatal("out of memory");
    out[0] = '\0';
    for (size_t i = from; i < to && i < e->count; i++) {
        if (i > from)
            strcat(out, "; ");
        strcat(out, e->msgs[i]);
    }
    return out;
}
