#include "config/schema.h"

#include <errno.h>
#include "base/file.h"

#include <arpa/inet.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"

void weft_cfg_error(vctx *v, const config_setting_t *s, const char *where, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    const char *file = s != NULL && config_setting_source_file(s) != NULL ? config_setting_source_file(s) : v->file;
    int line = s != NULL ? config_setting_source_line(s) : 0;
    weft_errors_add(v->errs, "%s:%d: %s: %s", file, line, where, msg);
    v->failed = 1;
}

char *weft_cfg_strdup(const char *s)
{
    char *d = strdup(s);
    if (d == NULL)
        weft_fatal("out of memory");
    return d;
}

void *weft_cfg_calloc(size_t n, size_t size)
{
    void *p = calloc(n == 0 ? 1 : n, size);
    if (p == NULL)
        weft_fatal("out of memory");
    return p;
}

static const char *type_name(int type)
{
    switch (type) {
    case CONFIG_TYPE_GROUP: return "a group { }";
    case CONFIG_TYPE_INT:
    case CONFIG_TYPE_INT64: return "an integer";
    case CONFIG_TYPE_FLOAT: return "a number";
    case CONFIG_TYPE_STRING: return "a string";
    case CONFIG_TYPE_BOOL: return "a boolean";
    case CONFIG_TYPE_ARRAY: return "an array [ ]";
    case CONFIG_TYPE_LIST: return "a list ( )";
    default: return "a value";
    }
}

/* libconfig accepts any key silently; a typo must not become a silent default. */
void weft_cfg_check_keys(vctx *v, const config_setting_t *group, const char *where, const char *const *allowed)
{
    for (int i = 0; i < config_setting_length(group); i++) {
        const config_setting_t *child = config_setting_get_elem(group, (unsigned)i);
        const char *name = config_setting_name(child);
        int ok = 0;
        for (const char *const *a = allowed; *a != NULL && !ok; a++)
            ok = strcmp(*a, name) == 0;
        if (!ok) {
            char list[256] = "";
            for (const char *const *a = allowed; *a != NULL; a++)
                snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", a == allowed ? "" : ", ", *a);
            weft_cfg_error(v, child, where, "unknown setting '%s' (known here: %s)", name, list);
        }
    }
}

void weft_cfg_path_join(char *buf, size_t size, const char *where, const char *name)
{
    snprintf(buf, size, "%s%s%s", where, *where ? "." : "", name);
}

/* Returns the member if present with the right type; NULL (and an error for a wrong type) otherwise. */
config_setting_t *weft_cfg_member(vctx *v, const config_setting_t *group, const char *where, const char *name, int type)
{
    config_setting_t *s = config_setting_get_member(group, name);
    if (s == NULL)
        return NULL;
    int t = config_setting_type(s);
    int match = t == type || (type == CONFIG_TYPE_INT && t == CONFIG_TYPE_INT64) ||
                (type == CONFIG_TYPE_ARRAY && t == CONFIG_TYPE_LIST);
    if (!match) {
        char p[256];
        weft_cfg_path_join(p, sizeof(p), where, name);
        weft_cfg_error(v, s, p, "must be %s, not %s", type_name(type), type_name(t));
        return NULL;
    }
    return s;
}

long long weft_cfg_int(vctx *v, const config_setting_t *group, const char *where, const char *name, long long min,
                         long long max, long long def)
{
    config_setting_t *s = weft_cfg_member(v, group, where, name, CONFIG_TYPE_INT);
    if (s == NULL)
        return def;
    long long val = config_setting_get_int64(s);
    if (val < min || val > max) {
        char p[256];
        weft_cfg_path_join(p, sizeof(p), where, name);
        weft_cfg_error(v, s, p, "must be between %lld and %lld (got %lld)", min, max, val);
        return def;
    }
    return val;
}

/* Returns a pointer owned by the libconfig tree (lives as long as cfg->lc). */
const char *weft_cfg_string(vctx *v, const config_setting_t *group, const char *where, const char *name,
                              const char *def)
{
    config_setting_t *s = weft_cfg_member(v, group, where, name, CONFIG_TYPE_STRING);
    return s == NULL ? def : config_setting_get_string(s);
}

int weft_cfg_choice(vctx *v, const config_setting_t *group, const char *where, const char *name,
                    const char *const *names, int n, int def)
{
    const char *val = weft_cfg_string(v, group, where, name, NULL);
    if (val == NULL)
        return def;
    char list[256] = "";
    for (int i = 0; i < n; i++) {
        if (strcmp(val, names[i]) == 0)
            return i;
        size_t len = strlen(list);
        snprintf(list + len, sizeof(list) - len, "%s%s", i > 0 ? ", " : "", names[i]);
    }
    char p[256];
    weft_cfg_path_join(p, sizeof(p), where, name);
    weft_cfg_error(v, config_setting_get_member(group, name), p, "'%s' is not one of %s", val, list);
    return def;
}

config_setting_t *weft_cfg_require(vctx *v, const config_setting_t *group, const char *where, const char *name,
                                 int type)
{
    config_setting_t *s = weft_cfg_member(v, group, where, name, type);
    if (s == NULL && config_setting_get_member(group, name) == NULL) {
        char p[256];
        weft_cfg_path_join(p, sizeof(p), where, name);
        weft_cfg_error(v, group, p, "is required");
    }
    return s;
}

char *weft_cfg_resolve_path(const char *config_path, const char *dir)
{
    if (dir[0] == '/')
        return weft_cfg_strdup(dir);
    /* Relative to the config file, not the working directory, so a config
     * means the same thing however the server was started. */
    char *copy = weft_cfg_strdup(config_path);
    char *base = dirname(copy);
    char *joined = NULL;
    if (asprintf(&joined, "%s/%s", base, dir) < 0)
        weft_fatal("out of memory");
    free(copy);
    char real[PATH_MAX];
    if (realpath(joined, real) != NULL) {
        free(joined);
        return weft_cfg_strdup(real);
    }
    return joined;
}

#define CREDENTIAL "credential:"

char *weft_cfg_secret_path(vctx *v, const config_setting_t *s, const char *where, const char *config_path,
                           const char *value)
{
    if (strncmp(value, CREDENTIAL, strlen(CREDENTIAL)) != 0)
        return weft_cfg_resolve_path(config_path, value);
    const char *name = value + strlen(CREDENTIAL);
    const char *dir = getenv("CREDENTIALS_DIRECTORY");
    if (name[0] == '\0' || strchr(name, '/') != NULL || strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
        weft_cfg_error(v, s, where, "'%s': a credential is named by a file name, without '/'", value);
        return NULL;
    }
    if (dir == NULL || dir[0] == '\0') {
        weft_cfg_error(v, s, where,
                       "'%s': CREDENTIALS_DIRECTORY is not set (systemd sets it for LoadCredential=%s:FILE; "
                       "elsewhere set it to the directory holding %s)",
                       value, name, name);
        return NULL;
    }
    char *path = NULL;
    if (asprintf(&path, "%s/%s", dir, name) < 0)
        weft_fatal("out of memory");
    return path;
}

char *weft_cfg_secret_read(vctx *v, const config_setting_t *s, const char *where, const char *config_path,
                           const char *value, size_t *len)
{
    char *path = weft_cfg_secret_path(v, s, where, config_path, value);
    if (path == NULL)
        return NULL;
    size_t n = 0;
    char *text = weft_file_read(path, &n);
    if (text == NULL)
        weft_cfg_error(v, s, where, "cannot read '%s': %s", path, strerror(errno));
    while (text != NULL && n > 0 && (text[n - 1] == '\n' || text[n - 1] == '\r' || text[n - 1] == ' '))
        text[--n] = '\0';
    free(path);
    if (len != NULL)
        *len = n;
    return text;
}
