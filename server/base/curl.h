/*
 * libcurl, loaded on demand, for the OTLP span exporter (base/otlp.c).
 * weft links no libcurl: through libldap, Debian's libcurl maps GnuTLS,
 * p11-kit, nettle, Kerberos and libunistring as well, about 3 MiB of shared
 * pages in every process, a third of an idle server's memory, while only a
 * server with trace.otlp_endpoint set makes one call. The exporter calls
 * weft_curl_load() before it starts, which dlopen()s libcurl.so.4 and fills
 * a table of function pointers (as db/pq.h does for libpq).
 *
 * Call sites keep libcurl's names: after this header, `curl_easy_init()`
 * means `(weft_curl.curl_easy_init)()`. curl.h still comes from the build's
 * pkg-config, for the types and to check every pointer against libcurl's own
 * prototype; its type-checking macros are off here, since curl_easy_setopt
 * is a pointer in this table.
 */
#ifndef WEFT_BASE_CURL_H
#define WEFT_BASE_CURL_H

#define CURL_DISABLE_TYPECHECK 1
#include <curl/curl.h>
#include <stddef.h>

/* Every libcurl function weft calls. A new call site needs its function
 * added here, or the build fails (the name would link to libcurl, which is
 * not linked). */
#define WEFT_CURL_FUNCTIONS(X)                                                                                         \
    X(curl_global_init)                                                                                              \
    X(curl_global_cleanup)                                                                                           \
    X(curl_easy_init)                                                                                                \
    X(curl_easy_setopt)                                                                                              \
    X(curl_easy_perform)                                                                                             \
    X(curl_easy_getinfo)                                                                                             \
    X(curl_easy_cleanup)                                                                                             \
    X(curl_easy_strerror)                                                                                            \
    X(curl_slist_append)                                                                                             \
    X(curl_slist_free_all)

/* curl.h's own argument-count macros for these two give way to the table's. */
#undef curl_easy_setopt
#undef curl_easy_getinfo
#define WEFT_CURL_SLOT(f) __typeof__(f) *f;
/** The loaded functions; valid once weft_curl_load() succeeded. */
typedef struct weft_curl_api {
    WEFT_CURL_FUNCTIONS(WEFT_CURL_SLOT)
} weft_curl_api;
#undef WEFT_CURL_SLOT

extern weft_curl_api weft_curl;

/**
 * Loads libcurl once per process (control thread; the library stays
 * loaded). Returns 0, or -1 with the reason in `why`.
 */
int weft_curl_load(char *why, size_t why_size);

#ifndef WEFT_CURL_IMPL
#define curl_global_init (weft_curl.curl_global_init)
#define curl_global_cleanup (weft_curl.curl_global_cleanup)
#define curl_easy_init (weft_curl.curl_easy_init)
#define curl_easy_setopt (weft_curl.curl_easy_setopt)
#define curl_easy_perform (weft_curl.curl_easy_perform)
#define curl_easy_getinfo (weft_curl.curl_easy_getinfo)
#define curl_easy_cleanup (weft_curl.curl_easy_cleanup)
#define curl_easy_strerror (weft_curl.curl_easy_strerror)
#define curl_slist_append (weft_curl.curl_slist_append)
#define curl_slist_free_all (weft_curl.curl_slist_free_all)
#endif

#endif
