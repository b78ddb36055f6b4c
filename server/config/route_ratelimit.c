/* A route's `rate_limit = { per = "client"; requests = 100; per_s = 60; burst = 20; }`
 * (http/ratelimit.c enforces it; docs/CONFIG.md documents it). */
#include <stdio.h>

#include "config/schema.h"

int weft_cfg_load_route_rate_limit(vctx *v, const config_setting_t *route, const char *where, weft_route_cfg *r)
{
    static const char *const keys[] = {"per", "requests", "per_s", "burst", NULL};
    static const char *const pers[] = {"client", "route"};
    r->rate_limit = (weft_ratelimit_cfg){.per = WEFT_RL_NONE};
    config_setting_t *g = config_setting_get_member(route, "rate_limit");
    if (g == NULL)
        return 1;
    if (!config_setting_is_group(g)) {
        weft_cfg_error(v, g, where, "rate_limit must be a group { per = \"client\"; requests = N; per_s = S; }");
        return 0;
    }
    char sub[96];
    snprintf(sub, sizeof(sub), "%s.rate_limit", where);
    int failed = v->failed;
    v->failed = 0;
    weft_cfg_check_keys(v, g, sub, keys);
    int per = weft_cfg_choice(v, g, sub, "per", pers, 2, 0);
    r->rate_limit.per = per == 1 ? WEFT_RL_ROUTE : WEFT_RL_CLIENT;
    if (weft_cfg_require(v, g, sub, "requests", CONFIG_TYPE_INT) != NULL)
        r->rate_limit.requests = (long)weft_cfg_int(v, g, sub, "requests", 1, 1000000000, 1);
    r->rate_limit.per_s = (long)weft_cfg_int(v, g, sub, "per_s", 1, 86400, 1);
    r->rate_limit.burst = (long)weft_cfg_int(v, g, sub, "burst", 1, 1000000000, r->rate_limit.requests);
    int ok = !v->failed;
    v->failed |= failed;
    if (!ok)
        r->rate_limit.per = WEFT_RL_NONE;
    return ok;
}
