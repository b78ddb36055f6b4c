/* libpq through dlopen (see pq.h for why). */
#define WEFT_PQ_IMPL
#include "db/pq.h"

#include "base/dynlib.h"
#include "base/log.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

weft_pq_api weft_pq;

/* The SONAME Debian's libpq5 installs; the major number is libpq's ABI. */
#define LIBPQ_SONAME "libpq.so.5"

static atomic_int loaded;

extern char **environ;

int weft_db_needed(const weft_db_cfg *cfg)
{
    if (cfg->configured)
        return 1;
    for (char **e = environ; e != NULL && *e != NULL; e++)
        if (strncmp(*e, "PG", 2) == 0)
            return 1;
    return 0;
}

int weft_pq_loaded(void) { return atomic_load_explicit(&loaded, memory_order_acquire); }

void weft_pq_install(const weft_pq_api *api)
{
    weft_pq = *api;
    atomic_store_explicit(&loaded, 1, memory_order_release);
}

int weft_pq_load(char *why, size_t why_size)
{
    if (weft_pq_loaded())
        return 0;
    void *h = weft_dynlib_open(LIBPQ_SONAME, "libpq5", why, why_size);
    if (h == NULL)
        return -1;
    weft_pq_api api;
#define WEFT_PQ_RESOLVE(f)                                                                                           \
    if ((api.f = (__typeof__(f) *)weft_dynlib_sym(h, LIBPQ_SONAME, #f, " (libpq 14 or newer is needed)", why,      \
                                                  why_size)) == NULL) {                                            \
        weft_dynlib_close(h);                                                                                      \
        return -1;                                                                                                 \
    }
    WEFT_PQ_FUNCTIONS(WEFT_PQ_RESOLVE)
#undef WEFT_PQ_RESOLVE
    /* libpq 17's: NULL when this libpq is older, and weft takes the older path. */
#define WEFT_PQ_OPTIONAL_RESOLVE(f) api.f = (__typeof__(f) *)dlsym(h, #f);
    WEFT_PQ_OPTIONAL(WEFT_PQ_OPTIONAL_RESOLVE)
#undef WEFT_PQ_OPTIONAL_RESOLVE
    weft_pq_install(&api);
    int v = weft_pq_version();
    /* Which paths this server takes, once: they change its system calls and threads. */
    weft_log_info("database: libpq %d.%d loaded; pipelined statements: %s; cancelling a running statement: %s",
                  v / 10000, v % 10000,
                  weft_pq_has_send_pipeline_sync() ? "one write per loop pass (PQsendPipelineSync)"
                                                   : "one write each (PQsendPipelineSync needs libpq 17)",
                  weft_pq_has_async_cancel() ? "on the loop (PQcancelStart)"
                                             : "a thread per cancel (PQcancelStart needs libpq 17)");
    return 0;
}

int weft_pq_version(void) { return weft_pq_loaded() ? weft_pq.PQlibVersion() : 0; }

int weft_pq_has_send_pipeline_sync(void) { return weft_pq_loaded() && weft_pq.PQsendPipelineSync != NULL; }

int weft_pq_has_async_cancel(void)
{
    /* All or nothing: libpq 17 brought them together. */
    return weft_pq_loaded() && weft_pq.PQcancelCreate != NULL && weft_pq.PQcancelStart != NULL &&
           weft_pq.PQcancelPoll != NULL && weft_pq.PQcancelStatus != NULL && weft_pq.PQcancelSocket != NULL &&
           weft_pq.PQcancelErrorMessage != NULL && weft_pq.PQcancelFinish != NULL;
}
