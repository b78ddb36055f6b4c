#include "config/intlit.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/file.h"
#include "base/log.h"

enum { LIT_RANGE = 1, LIT_WIDE = 2, LIT_OCTAL_LOOK = 4 };

/* One integer literal of a file's text, in the order libconfig met it. */
typedef struct lit {
    long long value;
    unsigned line;
    unsigned flags;
    char text[28]; /* for messages */
} lit;

typedef struct source {
    char *name; /* as libconfig recorded it; NULL: the main text */
    lit *lits;
    size_t n, next;
    int unreadable;
} source;

typedef struct checker {
    config_t *lc;
    const char *main_file, *main_text;
    weft_errors *errs;
    source *src;
    size_t n_src;
    int errors;
} checker;

static size_t run(const char *p, int (*is)(int))
{
    size_t n = 0;
    while (is((unsigned char)p[n]))
        n++;
    return n;
}

static size_t exponent(const char *p)
{
    if (*p != 'e' && *p != 'E')
        return 0;
    size_t s = p[1] == '-' || p[1] == '+' ? 2 : 1;
    size_t d = run(p + s, isdigit);
    return d > 0 ? s + d : 0;
}

static size_t suffix_l(const char *p) { return p[0] != 'L' ? 0 : p[1] == 'L' ? 2 : 1; }

/*
 * The longest of libconfig's number patterns at p, as flex picks it:
 * float  [-+]?[0-9]*\.[0-9]*([eE][-+]?[0-9]+)? | [-+]?[0-9]+(\.[0-9]*)?[eE][-+]?[0-9]+
 * integer [-+]?[0-9]+(L(L)?)?   hex 0[Xx][0-9A-Fa-f]+(L(L)?)?
 * Returns its length (0: none); *is_int says whether it is an integer.
 */
static size_t number_at(const char *p, int *is_int)
{
    size_t s = *p == '-' || *p == '+' ? 1 : 0;
    size_t d = run(p + s, isdigit);
    size_t fl = 0;
    if (p[s + d] == '.') {
        fl = s + d + 1 + run(p + s + d + 1, isdigit);
        fl += exponent(p + fl);
    } else if (d > 0 && exponent(p + s + d) > 0) {
        fl = s + d + exponent(p + s + d);
    }
    size_t il = d > 0 ? s + d + suffix_l(p + s + d) : 0;
    size_t hl = 0;
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X') && isxdigit((unsigned char)p[2])) {
        hl = 2 + run(p + 2, isxdigit);
        hl += suffix_l(p + hl);
    }
    size_t best = fl >= il ? fl : il; /* flex: the longest; float's rule comes first */
    *is_int = best > 0 && best != fl;
    if (hl > best) {
        *is_int = 1;
        best = hl;
    }
    return best;
}

/* The literal's own value (not what libconfig made of it), exact or flagged out of range. */
static void literal_value(const char *p, size_t len, lit *out)
{
    int neg = *p == '-';
    size_t i = *p == '-' || *p == '+' ? 1 : 0;
    int hex = p[0] == '0' && (p[1] == 'x' || p[1] == 'X');
    unsigned long long v = 0, limit = neg ? (unsigned long long)LLONG_MAX + 1 : (unsigned long long)LLONG_MAX;
    unsigned base = hex ? 16 : 10;
    out->flags = LIT_RANGE;
    if (hex)
        i = 2;
    else if (p[i] == '0' && isdigit((unsigned char)p[i + 1]))
        out->flags |= LIT_OCTAL_LOOK;
    for (; i < len && p[i] != 'L'; i++) {
        unsigned digit = isdigit((unsigned char)p[i]) ? (unsigned)(p[i] - '0') : (unsigned)(tolower(p[i]) - 'a' + 10);
        if (v > (limit - digit) / base) {
            out->flags &= ~(unsigned)LIT_RANGE;
            break;
        }
        v = v * base + digit;
    }
    if (len > 0 && p[len - 1] == 'L')
        out->flags |= LIT_WIDE;
    out->value = neg ? (long long)(0 - v) : (long long)v;
    snprintf(out->text, sizeof(out->text), "%.*s%s", len > 24 ? 24 : (int)len, p, len > 24 ? "..." : "");
}

static void push(source *s, size_t *cap, const char *p, size_t len, unsigned line)
{
    if (s->n == *cap) {
        *cap = *cap ? *cap * 2 : 16;
        if ((s->lits = realloc(s->lits, *cap * sizeof(*s->lits))) == NULL)
            weft_fatal("out of memory");
    }
    lit *l = &s->lits[s->n++];
    l->line = line;
    literal_value(p, len, l);
}

/* Skips a string (p at its opening quote), counting lines; returns past the closing quote. */
static const char *skip_string(const char *p, unsigned *line)
{
    for (p++; *p != '\0' && *p != '"'; p++) {
        if (*p == '\\' && (p[1] == '\\' || p[1] == '"'))
            p++;
        else if (*p == '\n')
            (*line)++;
    }
    return *p == '"' ? p + 1 : p;
}

/* The integer literals of `t`, tokenised as libconfig's scanner.l does (1.5 and 1.7 alike). */
static void scan(source *s, const char *t)
{
    size_t cap = 0;
    unsigned line = 1;
    for (const char *p = t; *p != '\0';) {
        int is_int = 0;
        size_t n;
        if (*p == '\n') {
            line++;
            p++;
        } else if (*p == '"') {
            p = skip_string(p, &line);
        } else if (strncmp(p, "@include", 8) == 0 && (p[8] == ' ' || p[8] == '\t')) {
            p += 8 + strspn(p + 8, " \t");
            if (*p == '"')
                p = skip_string(p, &line);
        } else if (*p == '#' || strncmp(p, "//", 2) == 0) {
            p += strcspn(p, "\n");
        } else if (strncmp(p, "/*", 2) == 0) {
            const char *e = strstr(p + 2, "*/");
            for (e = e != NULL ? e + 2 : p + strlen(p); p < e; p++)
                line += *p == '\n';
        } else if (isalpha((unsigned char)*p) || *p == '*') {
            for (p++; isalnum((unsigned char)*p) || *p == '-' || *p == '_' || *p == '*'; p++)
                ;
        } else if ((n = number_at(p, &is_int)) > 0) {
            if (is_int)
                push(s, &cap, p, n, line);
            p += n;
        } else {
            p++;
        }
    }
}

/* The file libconfig opened for an @include: 1.5 records the name as written
 * and opens it under the include directory; 1.7 records what it opened. */
static char *include_path(const config_t *lc, const char *name)
{
    const char *dir = config_get_include_dir(lc);
    char *path = NULL;
#if LIBCONFIG_VER_MAJOR == 1 && LIBCONFIG_VER_MINOR < 7
    if (dir != NULL && asprintf(&path, "%s/%s", dir, name) < 0)
        weft_fatal("out of memory");
#else
    (void)dir;
#endif
    if (path == NULL && (path = strdup(name)) == NULL)
        weft_fatal("out of memory");
    return path;
}

static source *source_of(checker *c, const char *file)
{
    int is_main = file == NULL || strcmp(file, c->main_file) == 0;
    for (size_t i = 0; i < c->n_src; i++)
        if (is_main ? c->src[i].name == NULL : c->src[i].name != NULL && strcmp(c->src[i].name, file) == 0)
            return &c->src[i];
    if ((c->src = realloc(c->src, (c->n_src + 1) * sizeof(*c->src))) == NULL)
        weft_fatal("out of memory");
    source *s = &c->src[c->n_src++];
    *s = (source){0};
    if (is_main && c->main_text != NULL) {
        scan(s, c->main_text);
        return s;
    }
    if (!is_main && (s->name = strdup(file)) == NULL)
        weft_fatal("out of memory");
    char *path = is_main ? strdup(c->main_file) : include_path(c->lc, file);
    char *text = path != NULL ? weft_file_read(path, NULL) : NULL;
    if (text == NULL) {
        weft_errors_add(c->errs, "%s: cannot read it again to check its integers: %s", path != NULL ? path : file,
                        strerror(errno));
        c->errors++;
        s->unreadable = 1;
    } else {
        scan(s, text);
    }
    free(text);
    free(path);
    return s;
}

/* "routes[0].max_body": the setting's place, as the other messages name it. */
static void setting_path(const config_setting_t *s, char *buf, size_t size)
{
    const config_setting_t *parent = config_setting_parent(s);
    if (parent == NULL || config_setting_is_root(parent)) {
        snprintf(buf, size, "%s", config_setting_name(s) != NULL ? config_setting_name(s) : "value");
        return;
    }
    setting_path(parent, buf, size);
    size_t n = strlen(buf);
    if (config_setting_name(s) != NULL)
        snprintf(buf + n, size - n, ".%s", config_setting_name(s));
    else
        snprintf(buf + n, size - n, "[%d]", config_setting_index(s));
}

static void report(checker *c, const config_setting_t *s, const char *fmt, ...) WEFT_PRINTF(3, 4);
static void report(checker *c, const config_setting_t *s, const char *fmt, ...)
{
    char where[256], why[320];
    setting_path(s, where, sizeof(where));
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    const char *file = config_setting_source_file(s) != NULL ? config_setting_source_file(s) : c->main_file;
    weft_errors_add(c->errs, "%s:%u: %s: %s", file, config_setting_source_line(s), where, why);
    c->errors++;
}

/*
 * libconfig's int fields are public in libconfig.h, and no call widens an int
 * setting (1.5's config_setting_set_int64 stores 0 in one, 1.7's refuses):
 * the setting becomes what libconfig 1.7 makes of a decimal past 32 bits.
 */
static void widen(config_setting_t *s, long long value)
{
    s->type = CONFIG_TYPE_INT64;
    s->value.llval = value;
}

static void check_one(checker *c, config_setting_t *s)
{
    source *src = source_of(c, config_setting_source_file(s));
    if (src->unreadable)
        return;
    if (src->next == src->n && src->n > 0)
        src->next = 0; /* the same file @included again */
    if (src->n == 0) {
        report(c, s, "this integer matches no literal in the file's text (was it changed while read?)");
        src->unreadable = 1;
        return;
    }
    const lit *l = &src->lits[src->next++];
    long long got = config_setting_get_int64(s);
    if (!(l->flags & LIT_RANGE)) {
        report(c, s, "%s is out of range (integers are 64-bit: -9223372036854775808 to 9223372036854775807)",
               l->text);
    } else if ((l->flags & LIT_OCTAL_LOOK) && !(l->flags & LIT_WIDE) && l->value > 7) {
        report(c, s, "%s: a leading 0 is octal to libconfig 1.7 and decimal to 1.5: write %lld without it",
               l->text, l->value);
    } else if ((uint32_t)got != (uint32_t)l->value) {
        report(c, s, "this integer (%lld) does not match the file's text (was it changed while read?)", got);
        src->unreadable = 1; /* every later match would be off by one */
    } else if (got != l->value ||
               (config_setting_type(s) == CONFIG_TYPE_INT && (l->value < INT_MIN || l->value > INT_MAX))) {
        widen(s, l->value);
    }
}

static void walk(checker *c, config_setting_t *s)
{
    int type = config_setting_type(s);
    if (type == CONFIG_TYPE_INT || type == CONFIG_TYPE_INT64) {
        check_one(c, s);
        return;
    }
    if (!config_setting_is_aggregate(s))
        return;
    int n = config_setting_length(s), ints = 0, wide = 0;
    for (int i = 0; i < n; i++) {
        config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
        walk(c, e);
        ints += config_setting_type(e) == CONFIG_TYPE_INT;
        wide += config_setting_type(e) == CONFIG_TYPE_INT64;
    }
    if (type == CONFIG_TYPE_ARRAY && ints > 0 && wide > 0)
        report(c, s, "mismatched element type in array: past 32 bits an element is 64-bit, and libconfig 1.7 "
               "refuses the mix: write each with L");
}

int weft_cfg_check_integers(config_t *lc, const char *main_file, const char *main_text, weft_errors *errs)
{
    checker c = {.lc = lc, .main_file = main_file, .main_text = main_text, .errs = errs};
    walk(&c, config_root_setting(lc));
    for (size_t i = 0; i < c.n_src; i++) {
        source *s = &c.src[i];
        if (!s->unreadable && s->next != s->n) {
            weft_errors_add(errs, "%s:%u: an integer libconfig did not read (%zu in the text, %zu read; was it "
                            "changed while read?)",
                            s->name != NULL ? s->name : main_file, s->lits[s->next].line, s->n, s->next);
            c.errors++;
        }
        free(s->name);
        free(s->lits);
    }
    free(c.src);
    return c.errors;
}
