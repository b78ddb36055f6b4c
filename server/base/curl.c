/* libcurl through dlopen (see curl.h for why). */
#define WEFT_CURL_IMPL
#include "base/curl.h"

#include <stdatomic.h>

#include "base/dynlib.h"

weft_curl_api weft_curl;

/* The SONAME of Debian's libcurl4 (OpenSSL flavour) and libcurl3-gnutls alike. */
#define LIBCURL_SONAME "libcurl.so.4"

static atomic_int loaded;

int weft_curl_load(char *why, size_t why_size)
{
    if (atomic_load_explicit(&loaded, memory_order_acquire))
        return 0;
    void *h = weft_dynlib_open(LIBCURL_SONAME, "libcurl4", why, why_size);
    if (h == NULL)
        return -1;
    weft_curl_api api;
#define WEFT_CURL_RESOLVE(f)                                                                                         \
    if ((api.f = (__typeof__(f) *)weft_dynlib_sym(h, LIBCURL_SONAME, #f, "", why, why_size)) == NULL) {            \
        weft_dynlib_close(h);                                                                                      \
        return -1;                                                                                                 \
    }
    WEFT_CURL_FUNCTIONS(WEFT_CURL_RESOLVE)
#undef WEFT_CURL_RESOLVE
    weft_curl = api;
    atomic_store_explicit(&loaded, 1, memory_order_release);
    return 0;
}
