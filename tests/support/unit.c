#include "unit.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char wt_tmpdir[256];
weft_errors wt_errs;
static char *msgs_buf;

void wt_unit_setup(const char *name)
{
    snprintf(wt_tmpdir, sizeof(wt_tmpdir), "/tmp/weft-unit-%s-XXXXXX", name);
    cr_assert_not_null(mkdtemp(wt_tmpdir), "mkdtemp: %s", strerror(errno));
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

void wt_unit_teardown(void)
{
    weft_errors_clear(&wt_errs);
    free(msgs_buf);
    msgs_buf = NULL;
    if (wt_tmpdir[0] != '\0')
        nftw(wt_tmpdir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}

const char *wt_errs_text(const weft_errors *e)
{
    free(msgs_buf);
    msgs_buf = NULL;
    size_t n = 1;
    for (size_t i = 0; i < e->count; i++)
        n += strlen(e->msgs[i]) + 3;
    char *s = malloc(n);
    cr_assert_not_null(s);
    s[0] = '\0';
    for (size_t i = 0; i < e->count; i++) {
        strcat(s, "\n  ");
        strcat(s, e->msgs[i]);
    }
    msgs_buf = s;
    return s;
}

const char *wt_errs_find(const weft_errors *e, const char *const *needles)
{
    for (size_t i = 0; i < e->count; i++) {
        int all = 1;
        for (const char *const *n = needles; *n != NULL && all; n++)
            all = strstr(e->msgs[i], *n) != NULL;
        if (all)
            return e->msgs[i];
    }
    return NULL;
}

void wt_expect_msg_v(const weft_errors *e, const char *const *needles)
{
    if (wt_errs_find(e, needles) != NULL)
        return;
    char want[1024] = "";
    for (const char *const *n = needles; *n != NULL; n++)
        snprintf(want + strlen(want), sizeof(want) - strlen(want), " [%s]", *n);
    cr_assert_fail("no message contains all of%s; messages:%s", want, wt_errs_text(e));
}

void wt_expect_no_msg(const weft_errors *e, const char *needle)
{
    for (size_t i = 0; i < e->count; i++)
        cr_assert_null(strstr(e->msgs[i], needle), "unexpected message: %s", e->msgs[i]);
}

void wt_copy_file(const char *from, const char *to)
{
    FILE *in = fopen(from, "rb");
    cr_assert_not_null(in, "%s: %s", from, strerror(errno));
    FILE *out = fopen(to, "wb");
    cr_assert_not_null(out, "%s: %s", to, strerror(errno));
    char buf[8192];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
        cr_assert_eq(fwrite(buf, 1, n, out), n);
    fclose(in);
    cr_assert_eq(fclose(out), 0);
}
