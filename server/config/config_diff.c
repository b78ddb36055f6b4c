#include "config/config_diff.h"

#include <stdio.h>
#include <string.h>

static int same_string(const char *a, const char *b) { return (a == NULL) == (b == NULL) && (a == NULL || strcmp(a, b) == 0); }

/* Settings the h2o globals or the listeners took at start-up: a reload that
 * changed them would be silently ignored, so it is refused instead. */
static void note(char *why, size_t size, const char *what)
{
    size_t n = strlen(why);
    snprintf(why + n, size - n, "%s; ", what);
}

int weft_config_restart_only(const weft_config *old, const weft_config *cur, char *msg, size_t size)
{
    char why[512] = "", item[64];
    if (old->threads != cur->threads) {
        snprintf(item, sizeof(item), "threads %d -> %d", old->threads, cur->threads);
        note(why, sizeof(why), item);
    }
    int listen_changed = old->n_listen != cur->n_listen;
    for (size_t i = 0; !listen_changed && i < cur->n_listen; i++)
        listen_changed = strcmp(old->listen[i].host, cur->listen[i].host) != 0 ||
                         old->listen[i].cfg_port != cur->listen[i].cfg_port ||
                         (old->listen[i].tls == NULL) != (cur->listen[i].tls == NULL);
    if (listen_changed)
        note(why, sizeof(why), "listen addresses");
    for (size_t i = 0; !listen_changed && i < cur->n_listen; i++)
        if (old->listen[i].proxy_protocol != cur->listen[i].proxy_protocol) {
            note(why, sizeof(why), "listen[].proxy_protocol");
            break;
        }
    if (old->admin.enabled != cur->admin.enabled || !same_string(old->admin.host, cur->admin.host) ||
        old->admin.cfg_port != cur->admin.cfg_port)
        note(why, sizeof(why), "admin listener");
    if (old->coroutine.stack_size != cur->coroutine.stack_size)
        note(why, sizeof(why), "coroutine.stack_size");
    if (old->limits.max_body != cur->limits.max_body)
        note(why, sizeof(why), "limits.max_body");
    if (old->limits.rate_limit_clients != cur->limits.rate_limit_clients)
        note(why, sizeof(why), "limits.rate_limit_clients");
    if (old->limits.max_connections != cur->limits.max_connections)
        note(why, sizeof(why), "limits.max_connections");
    if (old->limits.request_timeout_ms != cur->limits.request_timeout_ms)
        note(why, sizeof(why), "limits.request_timeout_ms");
    if (old->limits.idle_timeout_ms != cur->limits.idle_timeout_ms)
        note(why, sizeof(why), "limits.idle_timeout_ms");
    if (!same_string(old->log.access_log, cur->log.access_log))
        note(why, sizeof(why), "log.access_log");
    if (!same_string(old->log.error_log, cur->log.error_log))
        note(why, sizeof(why), "log.error_log");
    if (old->log.request_id_header != cur->log.request_id_header)
        note(why, sizeof(why), "log.request_id_header");
    size_t n = strlen(why);
    if (n == 0)
        return 0;
    why[n - 2] = '\0';
    snprintf(msg, size, "%s: these settings only change with a restart: %s (revert them to reload, or restart)",
             cur->path, why);
    return 1;
}

int weft_setting_equal(const config_setting_t *a, const config_setting_t *b)
{
    if (a == NULL || b == NULL)
        return a == b;
    int ta = config_setting_type(a), tb = config_setting_type(b);
    /* 5 and 5L are one number: libconfig's type says only how it was written. */
    if ((ta == CONFIG_TYPE_INT || ta == CONFIG_TYPE_INT64) && (tb == CONFIG_TYPE_INT || tb == CONFIG_TYPE_INT64))
        return config_setting_get_int64(a) == config_setting_get_int64(b);
    if (ta != tb)
        return 0;
    switch (ta) {
    case CONFIG_TYPE_INT:
    case CONFIG_TYPE_INT64: return config_setting_get_int64(a) == config_setting_get_int64(b);
    case CONFIG_TYPE_FLOAT: return config_setting_get_float(a) == config_setting_get_float(b);
    case CONFIG_TYPE_BOOL: return config_setting_get_bool(a) == config_setting_get_bool(b);
    case CONFIG_TYPE_STRING: return strcmp(config_setting_get_string(a), config_setting_get_string(b)) == 0;
    default: break;
    }
    int n = config_setting_length(a);
    if (n != config_setting_length(b))
        return 0;
    for (int i = 0; i < n; i++) {
        const config_setting_t *x = config_setting_get_elem(a, (unsigned)i);
        /* Groups by name (order does not matter), lists and arrays by position. */
        const config_setting_t *y = config_setting_is_group(a) ? config_setting_get_member(b, config_setting_name(x))
                                                               : config_setting_get_elem(b, (unsigned)i);
        if (!weft_setting_equal(x, y))
            return 0;
    }
    return 1;
}

static const char *prefer_name(int prefer) { return prefer < 0 ? "measure" : weft_dispatch_name((weft_dispatch)prefer); }

static size_t differ(char *out, size_t size, size_t n, const char *what, const char *a, const char *b)
{
    size_t len = strlen(out);
    snprintf(out + len, size - len, "%s%s %s -> %s", n > 0 ? ", " : "", what, a, b);
    return n + 1;
}

static size_t differ_int(char *out, size_t size, size_t n, const char *what, long long a, long long b)
{
    if (a == b)
        return n;
    char x[24], y[24];
    snprintf(x, sizeof(x), "%lld", a);
    snprintf(y, sizeof(y), "%lld", b);
    return differ(out, size, n, what, x, y);
}

size_t weft_route_settings_diff(const weft_route_cfg *old, const weft_route_cfg *cur, char *out, size_t size)
{
    size_t n = 0;
    out[0] = '\0';
    n = differ_int(out, size, n, "timeout_ms", old->timeout_ms, cur->timeout_ms);
    n = differ_int(out, size, n, "max_body", (long long)old->max_body, (long long)cur->max_body);
    n = differ_int(out, size, n, "stream_body", old->stream_body, cur->stream_body);
    n = differ_int(out, size, n, "max_concurrent", old->max_concurrent, cur->max_concurrent);
    if (old->dispatch != WEFT_DISPATCH_AUTO || cur->dispatch != WEFT_DISPATCH_AUTO)
        return n;
    if (old->adapt.prefer != cur->adapt.prefer)
        n = differ(out, size, n, "auto.prefer", prefer_name(old->adapt.prefer), prefer_name(cur->adapt.prefer));
    n = differ_int(out, size, n, "auto.min_dwell_s", old->adapt.min_dwell_s, cur->adapt.min_dwell_s);
    n = differ_int(out, size, n, "auto.probe_s", old->adapt.probe_s, cur->adapt.probe_s);
    n = differ_int(out, size, n, "auto.probe_max_s", old->adapt.probe_max_s, cur->adapt.probe_max_s);
    return n;
}
