/* libpq through dlopen (see pq.h for why). */
#define WEFT_PQ_IMPL
#include "db/pq.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
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

int weft_pq_load(char *why, size_t why_size)
{
    if (weft_pq_loaded())
        return 0;
    /* RTLD_LOCAL: libpq's symbols serve this table only, never a plugin by accident. */
    void *h = dlopen(LIBPQ_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        snprintf(why, why_size, "cannot load %s (Debian package libpq5): %s", LIBPQ_SONAME, dlerror());
        return -1;
    }
    weft_pq_api api;
#define WEFT_PQ_RESOLVE(f)                                                                                           \
    if ((api.f = (__typeof__(f) *)dlsym(h, #f)) == NULL) {                                                         \
        snprintf(why, why_size, "%s has no %s (libpq 14 or newer is needed)", LIBPQ_SONAME, #f);                  \
        dlclose(h);                                                                                                \
        return -1;                                                                                                 \
    }
    WEFT_PQ_FUNCTIONS(WEFT_PQ_RESOLVE)
#undef WEFT_PQ_RESOLVE
    weft_pq = api;
    atomic_store_explicit(&loaded, 1, memory_order_release);
    return 0;
}
