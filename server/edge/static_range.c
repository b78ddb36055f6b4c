#include "edge/static_range.h"

#include <stdint.h>
#include <strings.h>

static const char *skip_ws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    return p;
}

/* Digits into *out; NULL when there are none or too many for 64 bits. */
static const char *number(const char *p, const char *end, uint64_t *out)
{
    const char *start = p;
    uint64_t n = 0;
    for (; p < end && *p >= '0' && *p <= '9'; p++) {
        if (n > (UINT64_MAX - 9) / 10)
            return NULL;
        n = n * 10 + (uint64_t)(*p - '0');
    }
    *out = n;
    return p > start ? p : NULL;
}

int weft_range_acceptable(const char *v, size_t len)
{
    const char *p = v, *end = v + len;
    if (len < 6 || strncasecmp(v, "bytes=", 6) != 0)
        return 1; /* another unit: h2o refuses it with 416, which sends nothing */
    p += 6;
    int parts = 0, explicit_only = 1;
    uint64_t last_end = 0;
    for (;;) {
        p = skip_ws(p, end);
        uint64_t first = 0, last = 0;
        const char *q = number(p, end, &first);
        int has_first = q != NULL;
        p = has_first ? q : p;
        if (p == end || *p != '-')
            return 0;
        q = number(p + 1, end, &last);
        int has_last = q != NULL;
        p = has_last ? q : p + 1;
        if (!has_first && !has_last)
            return 0;
        if (++parts > WEFT_RANGE_MAX_PARTS)
            return 0;
        if (!has_first || !has_last || first > last)
            explicit_only = 0;
        else if (parts > 1 && first <= last_end)
            return 0; /* overlapping or out of order */
        if (has_last)
            last_end = last;
        p = skip_ws(p, end);
        if (p == end)
            break;
        if (*p != ',')
            return 0;
        p++;
    }
    /* One range of any form, or several explicit disjoint ascending ones. */
    return parts == 1 || explicit_only;
}
