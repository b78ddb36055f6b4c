/* Static routes in the config: each mistake refused by `weft -t` with
 * FILE:LINE and the reason, all at once; a valid one accepted. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness.h"

static int check(wt_server *s, const char *conf, char **out)
{
    wt_write_conf(s, conf);
    const char *args[] = {"-t", "-c", s->conf, NULL};
    return wt_run(out, args, NULL);
}

/* Some line of `out` names FILE:line and says `reason`. */
static void expect(const wt_server *s, const char *out, int line, const char *reason)
{
    char want[600];
    snprintf(want, sizeof(want), "%s:%d: ", s->conf, line);
    for (const char *p = out; (p = strstr(p, want)) != NULL; p++) {
        size_t n = strcspn(p, "\n");
        char one[1024];
        snprintf(one, sizeof(one), "%.*s", (int)n, p);
        if (strstr(one, reason) != NULL)
            return;
    }
    cr_assert_fail("want line %d to say '%s' in: %s", line, reason, out);
}

Test(static_config, every_mistake_is_named_with_file_and_line)
{
    wt_server s = {0};
    wt_write_conf(&s, "#\n");
    char www[400], file[500];
    snprintf(www, sizeof(www), "%s/www", s.dir);
    cr_assert_eq(mkdir(www, 0755), 0);
    snprintf(file, sizeof(file), "%s/file.txt", www);
    FILE *f = fopen(file, "w");
    fputs("x", f);
    fclose(f);
    char *out;
    int rc = check(&s,
                   WT_LISTEN "\n"                                                                    /* 1 */
                   "routes = (\n"                                                                    /* 2 */
                   "  { path = \"/a\"; static = { dir = \"nope\"; }; },\n"                           /* 3 */
                   "  { path = \"/b\"; static = { dir = \"www/file.txt\"; }; },\n"                   /* 4 */
                   "  { path = \"/c\"; plugin = \"hello\"; static = { dir = \"www\"; }; },\n"        /* 5 */
                   "  { path = \"/d\"; dispatch = \"pool\"; static = { dir = \"www\"; }; },\n"       /* 6 */
                   "  { path = \"/e/{x}\"; static = { dir = \"www\"; }; },\n"                        /* 7 */
                   "  { path = \"/f\"; static = { dir = \"www\"; index = [\"../x\"]; }; },\n"        /* 8 */
                   "  { path = \"/g\"; methods = [\"POST\"]; static = { dir = \"www\"; }; },\n"      /* 9 */
                   "  { path = \"/h\"; static = { dir = \"www\"; listing = true; }; },\n"            /* 10 */
                   "  { path = \"/i\"; static = \"www\"; },\n"                                       /* 11 */
                   "  { path = \"/j\"; static = { }; },\n"                                           /* 12 */
                   "  { path = \"/k\"; static = { dir = \"www\"; follow_symlinks = \"yes\"; }; },\n" /* 13 */
                   "  { path = \"/l\"; static = { dir = \"www\"; index = [\".htaccess\"]; }; }\n"    /* 14 */
                   ");\n",
                   &out);
    cr_assert_eq(rc, 1, "%s", out);
    expect(&s, out, 3, "No such file or directory");
    expect(&s, out, 4, "not a directory");
    expect(&s, out, 5, "plugin and static are exclusive");
    expect(&s, out, 6, "dispatch: not meaningful for a static route");
    expect(&s, out, 7, "literal prefix");
    expect(&s, out, 8, "index[0]: a file name");
    expect(&s, out, 9, "GET and HEAD only");
    expect(&s, out, 10, "unknown setting 'listing'");
    expect(&s, out, 11, "must be a group");
    expect(&s, out, 12, "dir: is required");
    expect(&s, out, 13, "must be a boolean");
    expect(&s, out, 14, "index[0]: a file name");
    free(out);
    wt_rm_rf(s.dir);
}

Test(static_config, two_static_routes_on_one_prefix_are_refused_naming_both)
{
    wt_server s = {0};
    wt_write_conf(&s, "#\n");
    char *out;
    int rc = check(&s,
                   WT_LISTEN "\n"
                   "routes = (\n"
                   "  { path = \"/s\"; static = { dir = \".\"; }; },\n"
                   "  { path = \"/s\"; static = { dir = \".\"; }; }\n"
                   ");\n",
                   &out);
    cr_assert_eq(rc, 1, "%s", out);
    char want[700];
    snprintf(want, sizeof(want), "%s:4: route /s: /s is already served as a prefix by the route at %s:3", s.conf,
             s.conf);
    cr_assert(strstr(out, want) != NULL, "want '%s' in: %s", want, out);
    free(out);
    wt_rm_rf(s.dir);
}

Test(static_config, a_static_route_alone_is_a_valid_config)
{
    wt_server s = {0};
    wt_write_conf(&s, "#\n");
    char *out;
    int rc = check(&s, WT_LISTEN "\nroutes = ( { path = \"/\"; static = { dir = \".\"; index = []; }; } );\n", &out);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    wt_rm_rf(s.dir);
}
