/*
 * Tests for server/reload/watcher.c: the plugin/config watch the control
 * thread uses, and the tagged directories `weft dev` watches beside it.
 * Waits are on the watcher's own wake callback, bounded at 5 s.
 */
#include "reload/watcher.h"

#include <criterion/criterion.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static atomic_int wakes;
static void on_wake(void) { atomic_fetch_add(&wakes, 1); }

static unsigned by_suffix(const char *name, int is_dir)
{
    size_t n = strlen(name);
    if (is_dir)
        return 4;
    if (n > 5 && strcmp(name + n - 5, ".part") == 0)
        return 0; /* put()'s temporary */
    return n > 2 && strcmp(name + n - 2, ".c") == 0 ? 1 : 2;
}

/* Writes dir/name by rename, as editors and `weft dev` do. */
static void put(const char *dir, const char *name)
{
    char tmp[512], path[512];
    snprintf(tmp, sizeof(tmp), "%s/%s.part", dir, name);
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(tmp, "w");
    cr_assert_not_null(f);
    fputs("x\n", f);
    fclose(f);
    cr_assert_eq(rename(tmp, path), 0);
}

/* Waits (5 s at most) for the watcher's next wake-up after `before`. */
static void wait_wake(int before)
{
    for (int i = 0; i < 500 && atomic_load(&wakes) == before; i++)
        usleep(10000);
}

typedef struct seen {
    int n;
    int tags[8];
    unsigned bits[8];
} seen;

static void collect(void *ud, int tag, unsigned bits)
{
    seen *s = ud;
    if (s->n < 8) {
        s->tags[s->n] = tag;
        s->bits[s->n++] = bits;
    }
}

static void take(weft_watcher *w, seen *s)
{
    memset(s, 0, sizeof(*s));
    unsigned long long at;
    weft_watcher_take_tagged(w, collect, s, &at);
}

/* Takes until something was recorded: each event wakes the watcher's client, 5 s at most. */
static void take_some(weft_watcher *w, seen *s)
{
    for (int i = 0; i < 50; i++) {
        int before = atomic_load(&wakes);
        take(w, s);
        if (s->n > 0)
            return;
        wait_wake(before);
    }
}

Test(watcher, tagged_directories_report_their_tag_and_survive_set)
{
    char a[] = "/tmp/weft-watch-a-XXXXXX", b[] = "/tmp/weft-watch-b-XXXXXX";
    cr_assert_not_null(mkdtemp(a));
    cr_assert_not_null(mkdtemp(b));
    weft_watcher *w = weft_watcher_new(on_wake);
    cr_assert_not_null(w);
    cr_assert_eq(weft_watcher_add(w, a, 7, 0, by_suffix), 0);
    char *dirs[] = {b};
    weft_watcher_set(w, dirs, 1, NULL, NULL);

    seen s;
    put(a, "x.c");
    take_some(w, &s);
    cr_assert_eq(s.n, 1);
    cr_assert_eq(s.tags[0], 7);
    cr_assert_eq(s.bits[0], 1u);
    take(w, &s);
    cr_assert_eq(s.n, 0, "taking clears the bits");

    /* the plugin watch is unaffected by the tagged one, and vice versa */
    put(b, "p.so");
    char names[256];
    unsigned long long at;
    int what = 0;
    for (int i = 0; i < 50 && what == 0; i++) {
        int before = atomic_load(&wakes);
        if ((what = weft_watcher_take(w, names, sizeof(names), &at)) == 0)
            wait_wake(before);
    }
    cr_assert_eq(what, 1);
    cr_assert_str_eq(names, "p");
    take(w, &s);
    cr_assert_eq(s.n, 0);

    /* re-arming the plugin/config set keeps the tagged directory */
    weft_watcher_set(w, NULL, 0, NULL, NULL);
    put(a, "route.conf");
    take_some(w, &s);
    cr_assert_eq(s.n, 1);
    cr_assert_eq(s.bits[0], 2u);
    cr_assert_eq(weft_watcher_take(w, names, sizeof(names), &at), 0);

    weft_watcher_free(w);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s %s", a, b);
    cr_assert_eq(system(cmd), 0);
}

Test(watcher, created_directories_are_reported_only_when_asked_for)
{
    char a[] = "/tmp/weft-watch-c-XXXXXX";
    cr_assert_not_null(mkdtemp(a));
    weft_watcher *w = weft_watcher_new(on_wake);
    cr_assert_not_null(w);
    cr_assert_eq(weft_watcher_add(w, a, 3, 1, by_suffix), 0);
    char sub[64];
    snprintf(sub, sizeof(sub), "%s/newproject", a);
    cr_assert_eq(mkdir(sub, 0700), 0);
    seen s;
    take_some(w, &s);
    cr_assert_eq(s.n, 1);
    cr_assert_eq(s.tags[0], 3);
    cr_assert_eq(s.bits[0], 4u);
    weft_watcher_free(w);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", a);
    cr_assert_eq(system(cmd), 0);
}
