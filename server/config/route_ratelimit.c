/* `rate_limit = { per = "client"; requests = 100; per_s = 60; burst = 20; }`,
 * at the top level (every route's default) or in a route (its own, or
 * `false` for none); http/ratelimit.c enforces it, docs/CONFIG.md documents it. */
#include <stdio.h>

#include "config/schema.h"

/* The group `g` into `out`; 0 on an error (reported). */
static int load_group(vctx *v, const config_setting_t *g, const char *where, weft_ratelimit_cfg *out)
{
    static const char *const keys[] = {"per", "requests", "per_s", "burst", NULL};
    static const char *const pers[] = {"client", "route"};
    char sub[96];
    snprintf(sub, sizeof(sub), "%s%srate_limit", where, where[0] != '\0' ? "." : "");
    int failed = v->failed;
    v->failed = 0;
    weft_cfg_check_keys(v, g, sub, keys);
    int per = weft_cfg_choice(v, g, sub, "per", pers, 2, 0);
    out->per = per == 1 ? WEFT_RL_ROUTE : WEFT_RL_CLIENT;
    if (weft_cfg_require(v, g, sub, "requests", CONFIG_TYPE_INT) != NULL)
        out->requests = (long)weft_cfg_int(v, g, sub, "requests", 1, 1000000000, 1);
    out->per_s = (long)weft_cfg_int(v, g, sub, "per_s", 1, 86400, 1);
    out->burst = (long)weft_cfg_int(v, g, sub, "burst", 1, 1000000000, out->requests);
    int ok = !v->failed;
    v->failed |= failed;
    if (!ok)
        out->per = WEFT_RL_NONE;
    return ok;
}

int weft_cfg_load_rate_limit(vctx *v, const config_setting_t *parent, const char *where, weft_ratelimit_cfg *out,
                             const weft_ratelimit_cfg *def)
{
    *out = def != NULL ? *def : (weft_ratelimit_cfg){.per = WEFT_RL_NONE};
    config_setting_t *g = config_setting_get_member(parent, "rate_limit");
    if (g == NULL)
        return 1;
    if (def != NULL && config_setting_type(g) == CONFIG_TYPE_BOOL && !config_setting_get_bool(g)) {
        *out = (weft_ratelimit_cfg){.per = WEFT_RL_NONE}; /* this route opts out of the default */
        return 1;
    }
    if (!config_setting_is_group(g)) {
        char sub[96];
        snprintf(sub, sizeof(sub), "%s%srate_limit", where, where[0] != '\0' ? "." : "");
        weft_cfg_error(v, g, where[0] != '\0' ? where : sub, "%s",
                       def != NULL ? "rate_limit must be a group { per = \"client\"; requests = N; per_s = S; } or false"
                                   : "must be a group { per = \"client\"; requests = N; per_s = S; }");
        return 0;
    }
    return load_group(v, g, where, out);
}
