/* libcurl through dlopen (see curl.h for why). */
#define WEFT_CURL_IMPL
#include "base/curl.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>

weft_curl_api weft_curl;

/* The SONAME of Debian's libcurl4 (OpenSSL flavour) and libcurl3-gnutls alike. */
#define LIBCURL_SONAME "libcurl.so.4"

static atomic_int loaded;

int weft_curl_load(char *why, size_t why_size)
{
    if (atomic_load_explicit(&loaded, memory_order_acquire))
        return 0;
    /* RTLD_LOCAL: libcurl's symbols serve this table only, never a plugin by accident. */
    void *h = dlopen(LIBCURL_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        snprintf(why, why_size, "cannot load %s (Debian package libcurl4): %s", LIBCURL_SONAME, dlerror());
        return -1;
    }
    weft_curl_api api;
#define WEFT_CURL_RESOLVE(f)                                                                                         \
    if ((api.f = (__typeof__(f) *)dlsym(h, #f)) == NULL) {                                                         \
        snprintf(why, why_size, "%s has no %s", LIBCURL_SONAME, #f);                                               \
        dlclose(h);                                                                                                \
        return -1;                                                                                                 \
    }
    WEFT_CURL_FUNCTIONS(WEFT_CURL_RESOLVE)
#undef WEFT_CURL_RESOLVE
    weft_curl = api;
    atomic_store_explicit(&loaded, 1, memory_order_release);
    return 0;
}
