#ifndef WEFT_BASE_HEX_H
#define WEFT_BASE_HEX_H

/* The one home of hex digits (request query decoding, static paths' %XX,
 * W3C trace context): inline, since each caller runs it per byte. */

/** 0–15 for a hex digit of either case, else -1. */
static inline int weft_hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = (char)(c | 0x20); /* ASCII lowercase; maps no non-letter into a–f */
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/** The same for lowercase digits only (W3C trace context allows no others). */
static inline int weft_hex_value_lower(char c)
{
    return c >= 'A' && c <= 'F' ? -1 : weft_hex_value(c);
}

#endif
