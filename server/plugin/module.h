/*
 * Plugin modules: finding a plugin's .so by name, loading it and checking
 * its descriptor before anything in it runs.
 */
#ifndef WEFT_MODULE_H
#define WEFT_MODULE_H

#include <stdatomic.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>
#include <weft/plugin.h>

#include "base/errors.h"
#include "request/route.h"

/** Descriptor bytes of ABI 1.0 (and the least of ABI 2): everything up to and including handle_async. */
#define WEFT_PLUGIN_MIN_SIZE (offsetof(weft_plugin, handle_async) + sizeof(void *))

typedef struct weft_module {
    char *name;
    char *path; /* the file it was loaded from */
    void *dl;
    const void *base; /* where its image is mapped (dladdr's dli_fbase): the crash report tells its frames by it */
    unsigned seq; /* 1 for the first version of this name loaded, 2 for the next... */
    /* identity of the file when it was loaded: a new inode, size or mtime is a new version */
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
    time_t loaded_at;
    char sha256[65]; /* of the file's bytes: a build's identity across restarts */
    struct weft_module *next; /* registry of loaded modules */
    /* The plugin's descriptor widened to this host's layout: fields an older
     * plugin did not know about are NULL. */
    weft_plugin desc;
    atomic_int refs;
} weft_module;

/* The module a route's plugin came from (the owner of its desc); NULL before it loaded. */
extern int weft_module_route_slot;
static inline weft_module *weft_route_module(const weft_route *rt) { return weft_route_get(rt, weft_module_route_slot); }
static inline void weft_route_set_module(weft_route *rt, weft_module *m) { weft_route_set(rt, weft_module_route_slot, m); }

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

/**
 * Loads and checks plugin `name`; NULL with a message in `errs` on failure.
 * If the file is the very one an already loaded module came from (same
 * inode, size and mtime), that module is returned with a new reference.
 * Otherwise the file is copied to a private file and loaded from there:
 * glibc caches dlopen() by path, and overwriting a mapped library crashes
 * the process, so every version gets its own copy.
 * The file and its directory must be owned by root or the server's user and
 * not writable by group or others (sshd's StrictModes rule): otherwise
 * anyone who can write there could run code as the server.
 */
weft_module *weft_module_load(const char *name, char *const *dirs, size_t n_dirs, weft_errors *errs);
/**
 * 1 if the file `name` resolves to now is one a loaded module came from (so
 * loading it again would reuse that module, and nothing new would run).
 */
int weft_module_is_loaded(const char *name, char *const *dirs, size_t n_dirs);
void weft_module_retain(weft_module *m);
/** Drops a reference; the last one dlclose()s the module. */
void weft_module_release(weft_module *m);

/**
 * Makes the private copy of plugin `name` ahead of its load, for a forked
 * probe child and then the server to load the same file (problems are left
 * to the load to report). Loads consume what they find prepared.
 */
void weft_module_prepare(const char *name, char *const *dirs, size_t n_dirs);
/** In a forked probe child: prepared copies are the parent's, never removed here. */
void weft_module_prepared_keep(void);
/** Removes the prepared copies no load consumed (a refused or failed build). */
void weft_module_prepared_drop(void);

/** Calls fn for every loaded module (old versions still draining included). */
void weft_module_foreach(void (*fn)(const weft_module *m, void *ctx), void *ctx);
/** Hands the private copy directory to the user the server switches to. */
void weft_module_chown_private(uid_t uid, gid_t gid);
/**
 * The private copy directory (created on first use), or NULL. A probe child
 * is handed it in WEFT_PROBE_DIR and copies there, never removing it.
 */
const char *weft_module_private_dir(void);
/** Removes the private copy directory (at exit). */
void weft_module_cleanup(void);

#endif
