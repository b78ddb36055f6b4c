#include "base/plugin_path.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"

void weft_plugin_path_init(weft_plugin_path *sp, char *const *cfg_dirs, size_t n_cfg_dirs)
{
    const char *env = getenv("WEFT_PLUGIN_PATH");
    *sp = (weft_plugin_path){.env_copy = env != NULL ? strdup(env) : NULL};
    size_t max = n_cfg_dirs + 1;
    for (const char *p = env; p != NULL && *p; p++)
        max += *p == ':';
    sp->dirs = malloc(max * sizeof(*sp->dirs));
    if (sp->dirs == NULL || (env != NULL && sp->env_copy == NULL))
        weft_fatal("out of memory");
    char *save = NULL;
    for (char *tok = sp->env_copy != NULL ? strtok_r(sp->env_copy, ":", &save) : NULL; tok != NULL;
         tok = strtok_r(NULL, ":", &save))
        sp->dirs[sp->n++] = tok;
    for (size_t i = 0; i < n_cfg_dirs; i++)
        if (cfg_dirs[i][0] != '\0')
            sp->dirs[sp->n++] = cfg_dirs[i];
}

void weft_plugin_path_free(weft_plugin_path *sp)
{
    free(sp->dirs);
    free(sp->env_copy);
    *sp = (weft_plugin_path){0};
}

void weft_plugin_path_format(const weft_plugin_path *sp, char *out, size_t size)
{
    size_t len = 0;
    out[0] = '\0';
    for (size_t i = 0; i < sp->n && len < size; i++) {
        int n = snprintf(out + len, size - len, "%s%s", i > 0 ? ":" : "", sp->dirs[i]);
        if (n < 0)
            break;
        len += (size_t)n;
    }
}
