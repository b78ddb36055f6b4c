/*
 * Plugin modules: finding a plugin's .so by name, loading it and checking
 * its descriptor before anything in it runs.
 */
#ifndef WEFT_MODULE_H
#define WEFT_MODULE_H

#include <stdatomic.h>
#include <stddef.h>
#include <weft/plugin.h>

#include "errors.h"

/** Descriptor bytes of ABI 1: everything up to and including handle_async. */
#define WEFT_PLUGIN_MIN_SIZE (offsetof(weft_plugin, handle_async) + sizeof(void *))

typedef struct weft_module {
    char *name;
    char *path; /* the file it was loaded from */
    void *dl;
    /* The plugin's descriptor widened to this host's layout: fields an older
     * plugin did not know about are NULL. */
    weft_plugin desc;
    atomic_int refs;
} weft_module;

/**
 * Checks a descriptor the way the loader does: magic, ABI, size, name.
 * `size_avail` is how many bytes at `desc` may be read (SIZE_MAX when it came
 * from a real plugin). Returns 0, or -1 with the reason in `why`.
 */
int weft_descriptor_check(const void *desc, size_t size_avail, const char *expected_name, char *why, size_t size);

/**
 * Finds "<name>.so" in WEFT_PLUGIN_PATH (colon-separated, searched first),
 * then in `dirs`. Writes the path into `out` and returns 0, or returns -1.
 */
int weft_module_find(const char *name, char *const *dirs, size_t n_dirs, char *out, size_t size);

/** Loads and checks plugin `name`; NULL with a message in `errs` on failure. */
weft_module *weft_module_load(const char *name, char *const *dirs, size_t n_dirs, weft_errors *errs);
void weft_module_retain(weft_module *m);
/** Drops a reference; the last one dlclose()s the module. */
void weft_module_release(weft_module *m);

#endif
