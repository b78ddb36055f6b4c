/* A route's `auto = { ... }` group: the knobs of dispatch = "auto"
 * (dispatch/auto.c does the moving; docs/CONFIG.md documents them). */
#include <stdio.h>
#include <string.h>

#include "config/schema.h"

int weft_cfg_load_route_auto(vctx *v, const config_setting_t *route, const char *where, weft_route_cfg *r)
{
    static const char *const keys[] = {"prefer", "min_dwell_s", "probe_s", "probe_max_s", NULL};
    static const char *const prefs[] = {"measure", "coroutine", "pool"};
    r->adapt = (weft_auto_cfg){.prefer = -1, .min_dwell_s = 60, .probe_s = 5, .probe_max_s = 300};
    config_setting_t *g = config_setting_get_member(route, "auto");
    if (g == NULL)
        return 1;
    if (r->dispatch != WEFT_DISPATCH_AUTO) {
        weft_cfg_error(v, g, where, "auto is only meaningful with dispatch = \"auto\"");
        return 0;
    }
    if (!config_setting_is_group(g)) {
        weft_cfg_error(v, g, where, "auto must be a group { prefer = ...; min_dwell_s = ...; }");
        return 0;
    }
    char sub[96];
    snprintf(sub, sizeof(sub), "%s.auto", where);
    int failed = v->failed;
    v->failed = 0;
    weft_cfg_check_keys(v, g, sub, keys);
    int p = weft_cfg_choice(v, g, sub, "prefer", prefs, 3, 0);
    r->adapt.prefer = p == 1 ? WEFT_DISPATCH_COROUTINE : p == 2 ? WEFT_DISPATCH_POOL : -1;
    r->adapt.min_dwell_s = (int)weft_cfg_int(v, g, sub, "min_dwell_s", 0, 86400, 60);
    r->adapt.probe_s = (int)weft_cfg_int(v, g, sub, "probe_s", 1, 86400, 5);
    r->adapt.probe_max_s = (int)weft_cfg_int(v, g, sub, "probe_max_s", 1, 86400, 300);
    if (!v->failed && r->adapt.probe_max_s < r->adapt.probe_s) {
        weft_cfg_error(v, g, sub, "probe_max_s (%d) is below probe_s (%d)", r->adapt.probe_max_s, r->adapt.probe_s);
    }
    int ok = !v->failed;
    v->failed |= failed;
    return ok;
}
