#ifndef WEFT_BASE_PLUGIN_PATH_H
#define WEFT_BASE_PLUGIN_PATH_H

#include <stddef.h>

/* The plugin search order, written once: the directories of
 * WEFT_PLUGIN_PATH (colon-separated, empty entries skipped) first, so a build
 * tree or a test can shadow installed plugins as GST_PLUGIN_PATH does for
 * GStreamer, then the config's plugin_dirs. The loader (plugin/module.c)
 * finds NAME.so along it and route fragments (config/route_files.c) take
 * NAME.routes only from the directory the loader would pick NAME.so from. */
typedef struct weft_plugin_path {
    const char **dirs; /* borrowed from the environment copy and the caller's list */
    size_t n;
    char *env_copy;
} weft_plugin_path;

/** Fills `sp` from WEFT_PLUGIN_PATH and `cfg_dirs`; aborts on out of memory (start-up and reload only). */
void weft_plugin_path_init(weft_plugin_path *sp, char *const *cfg_dirs, size_t n_cfg_dirs);
void weft_plugin_path_free(weft_plugin_path *sp);
/** The directories as one colon-separated line, for "not found in ..." messages. */
void weft_plugin_path_format(const weft_plugin_path *sp, char *out, size_t size);

#endif
