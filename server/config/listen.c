/* listen = ...; and admin = { ... }: the sockets weft binds, checked before anything is bound. */
#include "config/schema.h"

#include <arpa/inet.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/file.h"
#include "base/log.h"

/* "0.0.0.0:8080", "[::]:8080", "127.0.0.1:0" (0: an ephemeral port, for tests). */
static int parse_listen(vctx *v, const config_setting_t *s, const char *where, weft_listen_cfg *out)
{
    const char *text = config_setting_get_string(s);
    const char *colon = strrchr(text, ':');
    char host[INET6_ADDRSTRLEN + 2];
    if (colon == NULL || colon == text || (size_t)(colon - text) >= sizeof(host)) {
        weft_cfg_error(v, s, where, "'%s' is not ADDRESS:PORT (e.g. \"0.0.0.0:8080\" or \"[::]:8080\")", text);
        return -1;
    }
    memcpy(host, text, (size_t)(colon - text));
    host[colon - text] = '\0';
    char *h = host;
    if (h[0] == '[') {
        size_t n = strlen(h);
        if (h[n - 1] != ']') {
            weft_cfg_error(v, s, where, "'%s': unbalanced [ ] around the IPv6 address", text);
            return -1;
        }
        h[n - 1] = '\0';
        h++;
    }
    unsigned char addr[sizeof(struct in6_addr)];
    if (inet_pton(AF_INET, h, addr) != 1 && inet_pton(AF_INET6, h, addr) != 1) {
        weft_cfg_error(v, s, where, "'%s' is not a numeric IPv4 or IPv6 address", h);
        return -1;
    }
    char *end = NULL;
    errno = 0;
    long port = strtol(colon + 1, &end, 10);
    if (errno != 0 || end == colon + 1 || *end != '\0' || port < 0 || port > 65535) {
        weft_cfg_error(v, s, where, "'%s' is not a port number 0-65535", colon + 1);
        return -1;
    }
    out->host = weft_cfg_strdup(h);
    out->port = (uint16_t)port;
    out->cfg_port = (uint16_t)port;
    out->line = config_setting_source_line(s);
    return 0;
}


/* { address = "0.0.0.0:8443"; tls = { certificate = ...; key = ...; min_version = "TLSv1.2"; ciphers = ...; }; }
 * A list ( ) may mix such groups with plain address strings. */
static int parse_listen_group(vctx *v, weft_config *cfg, const config_setting_t *g, const char *where,
                              weft_listen_cfg *out)
{
    static const char *const keys[] = {"address", "tls", "trusted_proxies", "proxy_protocol",
                                       "client_header", NULL};
    static const char *const tls_keys[] = {"certificate", "key", "min_version", "ciphers", NULL};
    weft_cfg_check_keys(v, g, where, keys);
    config_setting_t *addr = weft_cfg_require(v, g, where, "address", CONFIG_TYPE_STRING);
    if (addr == NULL || parse_listen(v, addr, where, out) != 0)
        return -1;
    if (weft_cfg_load_proxies(v, g, where, out) != 0) {
        free(out->host);
        return -1;
    }
    config_setting_t *t = weft_cfg_member(v, g, where, "tls", CONFIG_TYPE_GROUP);
    if (t == NULL)
        return 0;
    char tw[96];
    snprintf(tw, sizeof(tw), "%s.tls", where);
    weft_cfg_check_keys(v, t, tw, tls_keys);
    config_setting_t *cert = weft_cfg_require(v, t, tw, "certificate", CONFIG_TYPE_STRING);
    config_setting_t *key = weft_cfg_require(v, t, tw, "key", CONFIG_TYPE_STRING);
    const char *minv = weft_cfg_string(v, t, tw, "min_version", "TLSv1.2");
    const char *ciphers = weft_cfg_string(v, t, tw, "ciphers", NULL);
    int version = strcmp(minv, "TLSv1.2") == 0 ? 0x0303 : strcmp(minv, "TLSv1.3") == 0 ? 0x0304 : -1;
    if (version < 0)
        weft_cfg_error(v, config_setting_get_member(t, "min_version"), tw, "min_version '%s' is not TLSv1.2 or TLSv1.3", minv);
    if (cert == NULL || key == NULL || version < 0) {
        free(out->host);
        return -1;
    }
    out->tls = weft_cfg_calloc(1, sizeof(*out->tls));
    /* Relative to the config file, like plugin_dirs. */
    out->tls->certificate = weft_cfg_secret_path(v, cert, tw, cfg->path, config_setting_get_string(cert));
    out->tls->key = weft_cfg_secret_path(v, key, tw, cfg->path, config_setting_get_string(key));
    if (out->tls->certificate == NULL || out->tls->key == NULL) {
        free(out->tls->certificate);
        free(out->tls->key);
        free(out->tls);
        out->tls = NULL;
        free(out->host);
        return -1;
    }
    out->tls->min_version = version;
    out->tls->ciphers = ciphers != NULL ? weft_cfg_strdup(ciphers) : NULL;
    return 0;
}

void weft_cfg_load_listen(vctx *v, weft_config *cfg, const config_setting_t *root)
{
    config_setting_t *list = weft_cfg_member(v, root, "", "listen", CONFIG_TYPE_ARRAY);
    int n = list != NULL ? config_setting_length(list) : 0;
    if (list != NULL && n == 0)
        weft_cfg_error(v, list, "listen", "needs at least one address");
    if (n == 0) {
        cfg->listen = weft_cfg_calloc(1, sizeof(*cfg->listen));
        cfg->listen[0] = (weft_listen_cfg){.host = weft_cfg_strdup("0.0.0.0"), .port = 8080, .cfg_port = 8080};
        cfg->n_listen = 1;
        return;
    }
    cfg->listen = weft_cfg_calloc((size_t)n, sizeof(*cfg->listen));
    for (int i = 0; i < n; i++) {
        config_setting_t *s = config_setting_get_elem(list, (unsigned)i);
        char where[64];
        snprintf(where, sizeof(where), "listen[%d]", i);
        if (config_setting_type(s) == CONFIG_TYPE_STRING) {
            if (parse_listen(v, s, where, &cfg->listen[cfg->n_listen]) == 0)
                cfg->n_listen++;
        } else if (config_setting_is_group(s)) {
            if (parse_listen_group(v, cfg, s, where, &cfg->listen[cfg->n_listen]) == 0)
                cfg->n_listen++;
        } else {
            weft_cfg_error(v, s, where, "must be \"ADDRESS:PORT\" or a group { address = \"ADDRESS:PORT\"; tls = { ... }; }");
        }
    }
}


static int is_loopback(const char *host)
{
    return strncmp(host, "127.", 4) == 0 || strcmp(host, "::1") == 0;
}

/* Which Host names the admin listener answers to (besides loopback ones),
 * and the bearer token /reload requires, read once from admin.token_file. */
static void load_admin_trust(vctx *v, weft_config *cfg, const config_setting_t *g)
{
    config_setting_t *hosts = weft_cfg_member(v, g, "admin", "allowed_hosts", CONFIG_TYPE_ARRAY);
    int n = hosts != NULL ? config_setting_length(hosts) : 0;
    if (n > 0)
        cfg->admin.allowed_hosts = calloc((size_t)n, sizeof(char *));
    for (int i = 0; i < n && cfg->admin.allowed_hosts != NULL; i++) {
        config_setting_t *h = config_setting_get_elem(hosts, (unsigned)i);
        if (config_setting_type(h) != CONFIG_TYPE_STRING || config_setting_get_string(h)[0] == '\0') {
            weft_cfg_error(v, h, "admin.allowed_hosts", "each entry must be a non-empty host name string");
            continue;
        }
        cfg->admin.allowed_hosts[cfg->admin.n_allowed_hosts++] = weft_cfg_strdup(config_setting_get_string(h));
    }
    const char *tf = weft_cfg_string(v, g, "admin", "token_file", NULL);
    if (tf == NULL)
        return;
    size_t len = 0;
    const config_setting_t *ts = config_setting_get_member(g, "token_file");
    char *token = weft_cfg_secret_read(v, ts, "admin.token_file", cfg->path, tf, &len);
    if (token != NULL && len < 16) {
        weft_cfg_error(v, ts, "admin.token_file", "'%s' holds fewer than 16 characters: too short for a token", tf);
        free(token);
        token = NULL;
    }
    cfg->admin.token = token;
}

/* The admin listener shows internals and can trigger reloads: loopback only
 * unless the operator says otherwise in so many words. */
void weft_cfg_load_admin(vctx *v, weft_config *cfg, const config_setting_t *root)
{
    static const char *const keys[] = {"listen", "allow_remote", "allowed_hosts", "token_file", NULL};
    cfg->admin.enabled = 1;
    cfg->admin.host = weft_cfg_strdup("127.0.0.1");
    cfg->admin.port = cfg->admin.cfg_port = 9901;
    cfg->admin.is_default = 1;
    config_setting_t *g = config_setting_get_member(root, "admin");
    if (g == NULL)
        return;
    if (config_setting_type(g) == CONFIG_TYPE_BOOL && !config_setting_get_bool(g)) {
        cfg->admin.enabled = 0;
        return;
    }
    if ((g = weft_cfg_member(v, root, "", "admin", CONFIG_TYPE_GROUP)) == NULL)
        return;
    weft_cfg_check_keys(v, g, "admin", keys);
    cfg->admin.is_default = 0;
    config_setting_t *l = weft_cfg_member(v, g, "admin", "listen", CONFIG_TYPE_STRING);
    weft_listen_cfg lc;
    if (l != NULL && parse_listen(v, l, "admin.listen", &lc) == 0) {
        free(cfg->admin.host);
        cfg->admin.host = lc.host;
        cfg->admin.port = cfg->admin.cfg_port = lc.port;
    }
    config_setting_t *remote = weft_cfg_member(v, g, "admin", "allow_remote", CONFIG_TYPE_BOOL);
    cfg->admin.allow_remote = remote != NULL && config_setting_get_bool(remote);
    if (!is_loopback(cfg->admin.host) && !cfg->admin.allow_remote)
        weft_cfg_error(v, l, "admin.listen",
             "'%s' is not a loopback address; the admin listener exposes internals and reloads, so set "
             "admin.allow_remote = true if you really mean it",
             cfg->admin.host);
    load_admin_trust(v, cfg, g);
}
