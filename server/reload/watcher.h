/*
 * Watches plugin directories (and, with `watch = true`, the config file)
 * and route fragment directories with inotify, and tells the control loop
 * what changed. Only completed files count: IN_CLOSE_WRITE (written in
 * place and closed) and IN_MOVED_TO (renamed into place), never a
 * half-written file; a fragment's removal counts too.
 */
#ifndef WEFT_WATCHER_H
#define WEFT_WATCHER_H

/**
 * For directories watched with weft_watcher_add: runs on the watcher thread
 * for each completed file (or created entry) `name`; returns the bits to
 * record for its directory, 0 to ignore it.
 */
typedef unsigned (*weft_watch_classify)(const char *name, int is_dir);

typedef struct weft_watcher weft_watcher;

/** `wake` is called from the watcher thread after events were recorded. */
weft_watcher *weft_watcher_new(void (*wake)(void));
void weft_watcher_free(weft_watcher *w);
enum { WEFT_WATCH_PLUGIN = 1, WEFT_WATCH_CONFIG = 2, WEFT_WATCH_ROUTES = 4 };

/**
 * Replaces the watched set: these plugin directories for *.so and
 * NAME.routes, `config` (NULL: none), and `routes_dir` for *.conf fragments
 * (NULL: none). Route fragments count when written, renamed in or removed.
 */
void weft_watcher_set(weft_watcher *w, char *const *dirs, int n_dirs, const char *config, const char *routes_dir);
/**
 * Takes the recorded events: returns a bit set of WEFT_WATCH_* (a plugin,
 * the config file, a route fragment changed) and the names of changed plugins in `names` (comma
 * separated), plus the time of the last event (CLOCK_MONOTONIC ns).
 */
int weft_watcher_take(weft_watcher *w, char *names, unsigned long size, unsigned long long *last_ns);

/**
 * Also watches `dir` (besides and independently of weft_watcher_set, which
 * keeps these): files completed in it and, with `created_too`, entries
 * created in it, as `classify` sees them; reported under `tag` by
 * weft_watcher_take_tagged. A directory is watched one way or the other,
 * never both. Returns 0, or -1 (logged) when it cannot be watched.
 */
int weft_watcher_add(weft_watcher *w, const char *dir, int tag, int created_too, weft_watch_classify classify);
/**
 * Calls fn(ud, tag, bits) once for each directory added with
 * weft_watcher_add that recorded bits since the last take, and clears them;
 * returns how many, plus the time of the last event (CLOCK_MONOTONIC ns).
 */
int weft_watcher_take_tagged(weft_watcher *w, void (*fn)(void *ud, int tag, unsigned bits), void *ud,
                             unsigned long long *last_ns);

#endif
