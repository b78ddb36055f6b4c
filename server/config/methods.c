#include "config/methods.h"

#include <stdio.h>
#include <string.h>

unsigned weft_method_bit(const char *name, size_t len)
{
    static const struct {
        const char *name;
        unsigned bit;
    } methods[] = {{"GET", WEFT_M_GET},       {"HEAD", WEFT_M_HEAD},   {"POST", WEFT_M_POST},
                   {"PUT", WEFT_M_PUT},       {"DELETE", WEFT_M_DELETE}, {"PATCH", WEFT_M_PATCH},
                   {"OPTIONS", WEFT_M_OPTIONS}};
    for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
        if (strlen(methods[i].name) == len && memcmp(methods[i].name, name, len) == 0)
            return methods[i].bit;
    return WEFT_M_OTHER;
}

void weft_methods_format(unsigned mask, char *buf, size_t size)
{
    static const char *const names[] = {"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"};
    size_t n = 0;
    buf[0] = '\0';
    for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if ((mask & (1u << i)) && n < size)
            n += (size_t)snprintf(buf + n, size - n, "%s%s", n ? ", " : "", names[i]);
}
