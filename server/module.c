#include "module.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "log.h"
#include "names.h"

int weft_descriptor_check(const void *desc, size_t size_avail, const char *expected_name, char *why, size_t size)
{
    const weft_plugin *d = desc;
    if (d == NULL) {
        snprintf(why, size, "weft_plugin_entry() returned NULL");
        return -1;
    }
    if (size_avail < offsetof(weft_plugin, name)) {
        snprintf(why, size, "descriptor is truncated");
        return -1;
    }
    if (d->magic != WEFT_PLUGIN_MAGIC) {
        snprintf(why, size, "bad magic 0x%08x (expected 0x%08x): not a weft plugin descriptor", d->magic,
                 WEFT_PLUGIN_MAGIC);
        return -1;
    }
    if (d->abi_version != WEFT_PLUGIN_ABI) {
        snprintf(why, size,
                 "plugin ABI mismatch: the plugin was built for plugin ABI %u, this server speaks ABI %u; rebuild it "
                 "against this server's weft/plugin.h",
                 d->abi_version, WEFT_PLUGIN_ABI);
        return -1;
    }
    if (d->struct_size < WEFT_PLUGIN_MIN_SIZE || d->struct_size > size_avail) {
        snprintf(why, size, "descriptor size %u is invalid: plugin ABI %u descriptors are at least %zu bytes",
                 d->struct_size, WEFT_PLUGIN_ABI, (size_t)WEFT_PLUGIN_MIN_SIZE);
        return -1;
    }
    if (d->flags != 0) {
        snprintf(why, size, "descriptor flags 0x%x are not understood by this server (expected 0)", d->flags);
        return -1;
    }
    if (d->name == NULL || !weft_name_is_valid(d->name)) {
        snprintf(why, size, "descriptor has no valid name");
        return -1;
    }
    if (expected_name != NULL && strcmp(d->name, expected_name) != 0) {
        snprintf(why, size,
                 "declares the name '%s' but was loaded as '%s': a plugin must live in <name>.so, and two plugins "
                 "cannot share a name",
                 d->name, expected_name);
        return -1;
    }
    if (d->handle == NULL && d->handle_async == NULL) {
        snprintf(why, size, "descriptor has neither handle nor handle_async");
        return -1;
    }
    return 0;
}

static int try_dir(const char *dir, size_t dlen, const char *name, char *out, size_t size)
{
    if (dlen == 0)
        return -1;
    int n = snprintf(out, size, "%.*s/%s.so", (int)dlen, dir, name);
    struct stat st;
    return n > 0 && (size_t)n < size && stat(out, &st) == 0 && S_ISREG(st.st_mode) ? 0 : -1;
}

int weft_module_find(const char *name, char *const *dirs, size_t n_dirs, char *out, size_t size)
{
    /* Searched first so a build tree or a test can shadow installed plugins,
     * as GST_PLUGIN_PATH does for GStreamer. */
    const char *env = getenv("WEFT_PLUGIN_PATH");
    for (const char *p = env; p != NULL && *p;) {
        const char *colon = strchr(p, ':');
        size_t len = colon ? (size_t)(colon - p) : strlen(p);
        if (try_dir(p, len, name, out, size) == 0)
            return 0;
        p += len + (colon != NULL);
    }
    for (size_t i = 0; i < n_dirs; i++)
        if (try_dir(dirs[i], strlen(dirs[i]), name, out, size) == 0)
            return 0;
    return -1;
}

weft_module *weft_module_load(const char *name, char *const *dirs, size_t n_dirs, weft_errors *errs)
{
    char path[4096];
    if (!weft_name_is_valid(name)) {
        weft_errors_add(errs, "plugin '%s': invalid plugin name", name);
        return NULL;
    }
    if (weft_module_find(name, dirs, n_dirs, path, sizeof(path)) != 0) {
        char searched[1024] = "";
        const char *env = getenv("WEFT_PLUGIN_PATH");
        if (env != NULL && *env)
            snprintf(searched, sizeof(searched), "%s", env);
        for (size_t i = 0; i < n_dirs; i++)
            snprintf(searched + strlen(searched), sizeof(searched) - strlen(searched), "%s%s",
                     searched[0] ? ":" : "", dirs[i]);
        weft_errors_add(errs, "plugin '%s': %s.so not found in %s", name, name,
                        searched[0] ? searched : "(no plugin_dirs configured and WEFT_PLUGIN_PATH unset)");
        return NULL;
    }
    /* RTLD_NOW: a missing symbol is a clean error here, not a crash mid-request.
     * RTLD_LOCAL: a plugin's symbols never satisfy another plugin's. */
    void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (dl == NULL) {
        weft_errors_add(errs, "plugin '%s' (%s): cannot load: %s", name, path, dlerror());
        return NULL;
    }
    weft_plugin_entry_fn entry;
    *(void **)&entry = dlsym(dl, WEFT_PLUGIN_ENTRY_SYMBOL);
    if (entry == NULL) {
        weft_errors_add(errs, "plugin '%s' (%s): missing descriptor: no %s() function exported", name, path,
                        WEFT_PLUGIN_ENTRY_SYMBOL);
        dlclose(dl);
        return NULL;
    }
    const weft_plugin *d = entry();
    char why[512];
    if (weft_descriptor_check(d, SIZE_MAX, name, why, sizeof(why)) != 0) {
        weft_errors_add(errs, "plugin '%s' (%s): refused: %s", name, path, why);
        dlclose(dl);
        return NULL;
    }
    weft_module *m = calloc(1, sizeof(*m));
    if (m == NULL)
        weft_fatal("out of memory");
    memcpy(&m->desc, d, d->struct_size < sizeof(m->desc) ? d->struct_size : sizeof(m->desc));
    m->name = strdup(name);
    m->path = strdup(path);
    m->dl = dl;
    atomic_init(&m->refs, 1);
    weft_log_debug("plugin '%s' %s loaded from %s", name, d->version ? d->version : "?", path);
    return m;
}

void weft_module_retain(weft_module *m) { atomic_fetch_add(&m->refs, 1); }

void weft_module_release(weft_module *m)
{
    if (m == NULL || atomic_fetch_sub(&m->refs, 1) != 1)
        return;
    dlclose(m->dl);
    free(m->name);
    free(m->path);
    free(m);
}
