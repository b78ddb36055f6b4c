/* A listen group's trusted_proxies = [ "10.0.0.0/8", "::1", ... ], the
 * header they name the client in (client_header) and proxy_protocol = true:
 * which peers may say who the client is
 * (http/client_addr.c reads the headers, core/proxyproto.c the PROXY header). */
#include <stdio.h>
#include <stdlib.h>

#include "base/cidr.h"
#include "config/schema.h"

int weft_cfg_load_proxies(vctx *v, const config_setting_t *g, const char *where, weft_listen_cfg *out)
{
    char sub[96];
    snprintf(sub, sizeof(sub), "%s.trusted_proxies", where);
    int failed = v->failed;
    v->failed = 0;
    config_setting_t *pp = weft_cfg_member(v, g, where, "proxy_protocol", CONFIG_TYPE_BOOL);
    out->proxy_protocol = pp != NULL && config_setting_get_bool(pp);
    static const char *const headers[] = {"X-Forwarded-For", "Forwarded"};
    out->forwarded = weft_cfg_choice(v, g, where, "client_header", headers, 2, 0) == 1;
    config_setting_t *list = weft_cfg_member(v, g, where, "trusted_proxies", CONFIG_TYPE_ARRAY);
    int n = list != NULL ? config_setting_length(list) : 0;
    if (list != NULL && n == 0)
        weft_cfg_error(v, list, sub, "an empty list trusts nobody; leave it out instead");
    if (n > 0)
        out->trusted = weft_cfg_calloc((size_t)n, sizeof(*out->trusted));
    for (int i = 0; i < n; i++) {
        config_setting_t *e = config_setting_get_elem(list, (unsigned)i);
        char why[160];
        if (config_setting_type(e) != CONFIG_TYPE_STRING) {
            weft_cfg_error(v, e, sub, "each entry must be a string such as \"10.0.0.0/8\" or \"::1\"");
            continue;
        }
        if (weft_cidr_parse(config_setting_get_string(e), &out->trusted[out->n_trusted], why, sizeof(why)) != 0)
            weft_cfg_error(v, e, sub, "%s", why);
        else
            out->n_trusted++;
    }
    int ok = !v->failed;
    v->failed |= failed;
    if (!ok) {
        free(out->trusted);
        out->trusted = NULL;
        out->n_trusted = 0;
        return -1;
    }
    return 0;
}
