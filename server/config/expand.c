#include "config/expand.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"

typedef struct out {
    char *buf;
    size_t len, cap;
} out;

static void put(out *o, const char *s, size_t n)
{
    if (o->len + n + 1 > o->cap) {
        o->cap = (o->len + n + 1) * 2;
        if ((o->buf = realloc(o->buf, o->cap)) == NULL)
            weft_fatal("out of memory");
    }
    memcpy(o->buf + o->len, s, n);
    o->len += n;
    o->buf[o->len] = '\0';
}

char *weft_config_expand_string(const char *in, char *why, size_t size)
{
    out o = {0};
    put(&o, "", 0);
    for (const char *p = in; *p != '\0';) {
        if (strncmp(p, "$${", 3) == 0) {
            put(&o, "${", 2);
            p += 3;
            continue;
        }
        if (strncmp(p, "${", 2) != 0) {
            put(&o, p, 1);
            p++;
            continue;
        }
        const char *name = p + 2, *e = name;
        while (isalnum((unsigned char)*e) || *e == '_')
            e++;
        const char *close = strchr(e, '}');
        int named = e > name && !isdigit((unsigned char)*name);
        int has_default = strncmp(e, ":-", 2) == 0;
        if (!named || close == NULL || (!has_default && e != close)) {
            snprintf(why, size, "'%.*s': a variable is ${NAME} or ${NAME:-default} (NAME: letters, digits, _; "
                     "$${ for a literal ${)", close != NULL ? (int)(close - p + 1) : (int)strlen(p), p);
            free(o.buf);
            return NULL;
        }
        char var[256];
        if ((size_t)(e - name) >= sizeof(var)) {
            /* Cut to fit, it would name (and read) another variable. */
            snprintf(why, size, "${%.32s...}: a variable name is at most %zu characters (this one has %zu)", name,
                     sizeof(var) - 1, (size_t)(e - name));
            free(o.buf);
            return NULL;
        }
        snprintf(var, sizeof(var), "%.*s", (int)(e - name), name);
        const char *val = getenv(var);
        if (val != NULL && (val[0] != '\0' || !has_default))
            put(&o, val, strlen(val));
        else if (has_default)
            put(&o, e + 2, (size_t)(close - e - 2));
        else {
            snprintf(why, size, "${%s} is not set in the environment (give a default: ${%s:-value})", var, var);
            free(o.buf);
            return NULL;
        }
        p = close + 1;
    }
    return o.buf;
}

static int walk(config_setting_t *s, const char *file, weft_errors *errs)
{
    int errors = 0;
    if (config_setting_is_aggregate(s)) {
        for (int i = 0; i < config_setting_length(s); i++)
            errors += walk(config_setting_get_elem(s, (unsigned)i), file, errs);
        return errors;
    }
    if (config_setting_type(s) != CONFIG_TYPE_STRING)
        return 0;
    const char *v = config_setting_get_string(s);
    if (strchr(v, '$') == NULL)
        return 0;
    char why[512];
    char *x = weft_config_expand_string(v, why, sizeof(why));
    if (x == NULL) {
        const char *f = config_setting_source_file(s);
        const char *name = config_setting_name(s);
        weft_errors_add(errs, "%s:%d: %s: %s", f != NULL ? f : file, config_setting_source_line(s),
                        name != NULL ? name : "value", why);
        return 1;
    }
    config_setting_set_string(s, x);
    free(x);
    return 0;
}

int weft_config_expand(config_setting_t *root, const char *file, weft_errors *errs)
{
    return walk(root, file, errs);
}
