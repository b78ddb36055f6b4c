/* The HTTP methods routes are matched on, as bits: the router and the config share them. */
#ifndef WEFT_METHODS_H
#define WEFT_METHODS_H

#include <stddef.h>

/* HTTP methods a route may restrict itself to, as a bit set. */
enum {
    WEFT_M_GET = 1u << 0,
    WEFT_M_HEAD = 1u << 1,
    WEFT_M_POST = 1u << 2,
    WEFT_M_PUT = 1u << 3,
    WEFT_M_DELETE = 1u << 4,
    WEFT_M_PATCH = 1u << 5,
    WEFT_M_OPTIONS = 1u << 6,
    WEFT_M_OTHER = 1u << 7, /* any method weft has no bit for */
    WEFT_M_ALL = 0xffu
};
/** Bit for a method name (case-sensitive, as HTTP says); WEFT_M_OTHER if unknown. */
unsigned weft_method_bit(const char *name, size_t len);
/** Writes "GET, HEAD, POST" for a mask into buf. */
void weft_methods_format(unsigned mask, char *buf, size_t size);

#endif
