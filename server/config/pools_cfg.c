/* The pools group: the worker-thread pools routes with dispatch = "pool" or "auto" run on, and finding one by name. */
#include <stdio.h>
#include <string.h>

#include "base/names.h"
#include "config/schema.h"

void weft_cfg_load_pools(vctx *v, weft_config *cfg, const config_setting_t *root)
{
    static const char *const keys[] = {"name", "size", "queue", "queue_timeout_ms", "max_long_lived", "nice", NULL};
    config_setting_t *list = weft_cfg_member(v, root, "", "pools", CONFIG_TYPE_ARRAY);
    int n = list != NULL ? config_setting_length(list) : 0;
    cfg->pools = weft_cfg_calloc((size_t)n + 1, sizeof(*cfg->pools));
    for (int i = 0; i < n; i++) {
        config_setting_t *g = config_setting_get_elem(list, (unsigned)i);
        char where[64];
        snprintf(where, sizeof(where), "pools[%d]", i);
        if (!config_setting_is_group(g)) {
            weft_cfg_error(v, g, where, "must be a group { name = ...; size = ...; queue = ...; }");
            continue;
        }
        weft_cfg_check_keys(v, g, where, keys);
        config_setting_t *name = weft_cfg_require(v, g, where, "name", CONFIG_TYPE_STRING);
        if (name == NULL)
            continue;
        const char *nm = config_setting_get_string(name);
        if (!weft_name_is_valid(nm)) {
            weft_cfg_error(v, name, where, "pool name '%s' must be 1-64 characters of a-z, 0-9, '_' or '-'", nm);
            continue;
        }
        if (weft_config_find_pool(cfg, nm) != NULL) {
            weft_cfg_error(v, name, where, "pool '%s' is defined twice", nm);
            continue;
        }
        weft_pool_cfg *p = &cfg->pools[cfg->n_pools++];
        p->name = weft_cfg_strdup(nm);
        p->size = (int)weft_cfg_int(v, g, where, "size", 1, 4096, 200);
        p->queue = (int)weft_cfg_int(v, g, where, "queue", 0, 1000000, 10000);
        p->queue_timeout_ms = (int)weft_cfg_int(v, g, where, "queue_timeout_ms", 0, 3600000, 30000);
        p->max_long_lived = (int)weft_cfg_int(v, g, where, "max_long_lived", 0, 100000, p->size);
        p->nice = (int)weft_cfg_int(v, g, where, "nice", 0, 19, 0);
        p->line = config_setting_source_line(g);
    }
    if (weft_config_find_pool(cfg, "default") == NULL) {
        /* Like a servlet container's 200-thread pool; threads start only if a route uses it. */
        cfg->pools[cfg->n_pools++] = (weft_pool_cfg){.name = weft_cfg_strdup("default"), .size = 200, .queue = 10000,
                                                        .queue_timeout_ms = 30000, .max_long_lived = 200};
    }
}

const weft_pool_cfg *weft_config_find_pool(const weft_config *cfg, const char *name)
{
    for (size_t i = 0; i < cfg->n_pools; i++)
        if (strcmp(cfg->pools[i].name, name) == 0)
            return &cfg->pools[i];
    return NULL;
}
