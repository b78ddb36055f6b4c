/*
 * libFuzzer target: the PROXY protocol header parser (core/proxyproto.c) and
 * trusted_proxies ranges (base/cidr.c), both fed by hostile bytes: the first
 * by any client of a proxy_protocol listener, the second by a config file.
 *
 * Besides "no crash, no overread" (ASan+UBSan), it checks what the reader on
 * the socket relies on:
 *   - a length never past the input; an address only of the family its
 *     length says;
 *   - every proper prefix of an accepted header is "incomplete" (0), never
 *     "invalid" (-1): a header split across reads must not be refused;
 *   - the verdict on a whole header does not change with what follows it.
 * And for a range that parses: its prefix is at most 128 and its own network
 * address is in it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>

#include "base/cidr.h"
#include "core/proxyproto.h"

#define CHECK(cond)                                                                                                    \
    do {                                                                                                               \
        if (!(cond))                                                                                                   \
            __builtin_trap();                                                                                          \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sockaddr_storage sa;
    socklen_t len = 0;
    long n = weft_proxyproto_parse(data, size, &sa, &len);
    CHECK(n >= -1 && n <= (long)size);
    if (n > 0) {
        CHECK(len == 0 || (len == sizeof(struct sockaddr_in) && sa.ss_family == AF_INET) ||
              (len == sizeof(struct sockaddr_in6) && sa.ss_family == AF_INET6));
        for (long k = 0; k < n; k += (n > 256 ? 7 : 1)) {
            socklen_t l2;
            struct sockaddr_storage s2;
            CHECK(weft_proxyproto_parse(data, (size_t)k, &s2, &l2) == 0);
        }
        socklen_t l3;
        struct sockaddr_storage s3;
        CHECK(weft_proxyproto_parse(data, (size_t)n, &s3, &l3) == n && l3 == len);
    }

    char text[128];
    size_t t = size < sizeof(text) - 1 ? size : sizeof(text) - 1;
    memcpy(text, data, t);
    text[t] = '\0';
    weft_cidr c;
    char why[200];
    if (weft_cidr_parse(text, &c, why, sizeof(why)) == 0) {
        CHECK(c.prefix <= 128);
        CHECK(weft_cidr_match(&c, 1, c.addr));
    }
    return 0;
}
