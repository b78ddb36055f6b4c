/*
 * Address ranges the operator trusts (listen[].trusted_proxies): "10.0.0.0/8",
 * "2001:db8::/32", or a bare address ("::1", one host). Every address is
 * held as 16 bytes, IPv4 as ::ffff:a.b.c.d, so an IPv4 client reaching an
 * IPv6 socket matches the IPv4 range it belongs to.
 */
#ifndef WEFT_CIDR_H
#define WEFT_CIDR_H

#include <stddef.h>
#include <stdint.h>

typedef struct weft_cidr {
    uint8_t addr[16]; /* the network, host bits cleared */
    unsigned prefix;  /* 0-128, counted on the 16-byte form (an IPv4 /8 is 104) */
} weft_cidr;

/** Parses `text`; 0, or -1 with the reason in `why`. Host bits set under the mask are refused (a typo, mostly). */
int weft_cidr_parse(const char *text, weft_cidr *out, char *why, size_t size);
/** Parses a bare IPv4 or IPv6 address (no port, no brackets) of `len` bytes into 16 bytes; 0 or -1. */
int weft_addr_parse(const char *text, size_t len, uint8_t out[16]);
/** Whether the 16-byte address `a` is in one of the n ranges. */
int weft_cidr_match(const weft_cidr *list, size_t n, const uint8_t a[16]);

#endif
