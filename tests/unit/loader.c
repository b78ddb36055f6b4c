/*
 * Tests for server/module.c (finding, loading and checking plugins) and the
 * plugin-facing half of server/generation.c (entry points, init, options).
 * Fixture plugins come from tests/plugins/, built into WEFT_FIXTURE_DIR.
 */
#include "plugin/module.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/config.h"
#include "base/errors.h"
#include "reload/generation.h"
#include "request/request.h"

static char *fixture_dirs[] = {WEFT_FIXTURE_DIR};
static char tmpdir[256];

/* Messages and their joined text live in statics that teardown frees, so a
 * failed assertion (which longjmps out of the test) leaks nothing. */
static weft_errors errs;
static char *msgs_buf;

static void loader_setup(void)
{
    /* The developer's environment must not shadow the fixtures. */
    unsetenv("WEFT_PLUGIN_PATH");
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/weft-unit-loader-XXXXXX");
    cr_assert_not_null(mkdtemp(tmpdir), "mkdtemp: %s", strerror(errno));
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void loader_teardown(void)
{
    weft_module_cleanup(); /* the loader's private directory for plugin copies */
    weft_errors_clear(&errs);
    free(msgs_buf);
    msgs_buf = NULL;
    if (tmpdir[0] != '\0')
        nftw(tmpdir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}

TestSuite(loader, .init = loader_setup, .fini = loader_teardown);

static char *all_msgs(const weft_errors *e)
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

/* Asserts that one message contains every needle (NULL-terminated). */
static void expect_msg_v(const weft_errors *e, const char *const *needles)
{
    for (size_t i = 0; i < e->count; i++) {
        int all = 1;
        for (const char *const *n = needles; *n != NULL && all; n++)
            all = strstr(e->msgs[i], *n) != NULL;
        if (all)
            return;
    }
    char want[1024] = "";
    for (const char *const *n = needles; *n != NULL; n++)
        snprintf(want + strlen(want), sizeof(want) - strlen(want), " [%s]", *n);
    cr_assert_fail("no message contains all of%s; messages:%s", want, all_msgs(e));
}

#define expect_msg(e, ...) expect_msg_v((e), (const char *const[]){__VA_ARGS__, NULL})

static void expect_no_msg(const weft_errors *e, const char *needle)
{
    for (size_t i = 0; i < e->count; i++)
        cr_assert_null(strstr(e->msgs[i], needle), "unexpected message: %s", e->msgs[i]);
}

static void fixture_path(char *buf, size_t size, const char *name)
{
    snprintf(buf, size, "%s/%s.so", WEFT_FIXTURE_DIR, name);
}

/* Loading a fixture that must be refused: one message, naming name and file. */
static void expect_refused(const char *name, const char *reason)
{
    char path[512];
    fixture_path(path, sizeof(path), name);
    weft_module *m = weft_module_load(name, fixture_dirs, 1, &errs);
    cr_assert_null(m, "%s was loaded", name);
    cr_assert_eq(errs.count, 1, "%s: %zu messages:%s", name, errs.count, all_msgs(&errs));
    char quoted[128];
    snprintf(quoted, sizeof(quoted), "plugin '%s'", name);
    expect_msg(&errs, quoted, path, reason);
    weft_errors_clear(&errs);
}

static void copy_file(const char *from, const char *to)
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

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s: %s", path, strerror(errno));
    fputs(text, f);
    cr_assert_eq(fclose(f), 0);
}

/* ---- loading the fixtures ---- */

Test(loader, echo_loads)
{
    weft_module *m = weft_module_load("echo", fixture_dirs, 1, &errs);
    cr_assert_not_null(m, "echo refused:%s", all_msgs(&errs));
    cr_assert_eq(errs.count, 0);
    cr_assert_str_eq(m->name, "echo");
    cr_assert_str_eq(m->desc.name, "echo");
    char path[512];
    fixture_path(path, sizeof(path), "echo");
    cr_assert_str_eq(m->path, path);
    cr_assert_eq(m->desc.magic, WEFT_PLUGIN_MAGIC);
    cr_assert_eq(m->desc.abi_version, WEFT_PLUGIN_ABI);
    cr_assert_not_null(m->desc.handle);
    cr_assert_not_null(m->desc.handle_async);
    cr_assert_not_null(m->desc.init);
    cr_assert_not_null(m->desc.fini);
    cr_assert_eq(atomic_load(&m->refs), 1);
    weft_module_retain(m);
    cr_assert_eq(atomic_load(&m->refs), 2);
    weft_module_release(m);
    cr_assert_eq(atomic_load(&m->refs), 1);
    weft_module_release(m);
    weft_module_release(NULL); /* harmless */
}

Test(loader, wrong_abi_refused_naming_both_abis)
{
    char reason[128];
    snprintf(reason, sizeof(reason), "built for plugin ABI %u, this server speaks ABI %u", WEFT_PLUGIN_ABI + 1,
             WEFT_PLUGIN_ABI);
    expect_refused("wrong_abi", reason);
}

Test(loader, missing_descriptor_refused)
{
    expect_refused("no_descriptor", "weft_plugin_entry");
}

Test(loader, dup_name_refused)
{
    expect_refused("dup_name", "declares the name 'hello'");
}

Test(loader, not_a_shared_object_refused)
{
    char junk[400];
    snprintf(junk, sizeof(junk), "%s/junk.so", tmpdir);
    write_text(junk, "this is not an ELF file\n");
    char *dirs[] = {tmpdir};
    cr_assert_null(weft_module_load("junk", dirs, 1, &errs));
    cr_assert_eq(errs.count, 1);
    expect_msg(&errs, "plugin 'junk'", junk, "cannot load");
    weft_errors_clear(&errs);
}

Test(loader, directory_named_like_a_plugin_is_not_found)
{
    char sub[400];
    snprintf(sub, sizeof(sub), "%s/dir.so", tmpdir);
    cr_assert_eq(mkdir(sub, 0700), 0);
    char *dirs[] = {tmpdir};
    cr_assert_null(weft_module_load("dir", dirs, 1, &errs));
    expect_msg(&errs, "plugin 'dir'", "dir.so not found");
    weft_errors_clear(&errs);
}

Test(loader, not_found_lists_searched_dirs)
{
    char *dirs[] = {WEFT_FIXTURE_DIR, "/nonexistent/weft-plugins"};
    cr_assert_null(weft_module_load("nosuch", dirs, 2, &errs));
    cr_assert_eq(errs.count, 1);
    expect_msg(&errs, "plugin 'nosuch'", "nosuch.so not found", WEFT_FIXTURE_DIR, "/nonexistent/weft-plugins");
    weft_errors_clear(&errs);

    setenv("WEFT_PLUGIN_PATH", tmpdir, 1);
    cr_assert_null(weft_module_load("nosuch", dirs, 2, &errs));
    expect_msg(&errs, "nosuch.so not found", tmpdir, WEFT_FIXTURE_DIR);
    weft_errors_clear(&errs);
}

Test(loader, not_found_without_any_dirs)
{
    cr_assert_null(weft_module_load("echo", NULL, 0, &errs));
    expect_msg(&errs, "plugin 'echo'", "not found", "WEFT_PLUGIN_PATH");
    weft_errors_clear(&errs);
}

Test(loader, invalid_names_refused_before_any_lookup)
{
    static const char *const bad[] = {"../x", "../echo", "a/b", "/etc/passwd", "", ".hidden", "Echo", "-x", "e cho"};
    /* "../echo" would even exist relative to a plugin dir's subfolder: never look. */
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cr_assert_null(weft_module_load(bad[i], fixture_dirs, 1, &errs), "'%s' loaded", bad[i]);
        char quoted[64];
        snprintf(quoted, sizeof(quoted), "plugin '%s'", bad[i]);
        expect_msg(&errs, quoted, "invalid plugin name");
        weft_errors_clear(&errs);
    }
}

Test(loader, plugin_path_env_searched_first)
{
    char copy[400], from[512];
    snprintf(copy, sizeof(copy), "%s/echo.so", tmpdir);
    fixture_path(from, sizeof(from), "echo");
    copy_file(from, copy);
    char env[800];
    snprintf(env, sizeof(env), "/nonexistent/a::%s", tmpdir); /* an empty entry is skipped */
    setenv("WEFT_PLUGIN_PATH", env, 1);

    char found[4096];
    cr_assert_eq(weft_module_find("echo", fixture_dirs, 1, found, sizeof(found)), 0);
    cr_assert_str_eq(found, copy);

    weft_module *m = weft_module_load("echo", fixture_dirs, 1, &errs);
    cr_assert_not_null(m, "%s", all_msgs(&errs));
    cr_assert_str_eq(m->path, copy, "WEFT_PLUGIN_PATH must win over plugin_dirs");
    weft_module_release(m);

    /* Plugins not in WEFT_PLUGIN_PATH still come from the dirs. */
    cr_assert_eq(weft_module_find("init_fails", fixture_dirs, 1, found, sizeof(found)), 0);
    cr_assert_not_null(strstr(found, WEFT_FIXTURE_DIR));
}

Test(loader, env_junk_shadows_dirs)
{
    /* Proof of order from the failure side: a broken echo.so in the env dir is what gets loaded. */
    char junk[400];
    snprintf(junk, sizeof(junk), "%s/echo.so", tmpdir);
    write_text(junk, "garbage");
    setenv("WEFT_PLUGIN_PATH", tmpdir, 1);
    cr_assert_null(weft_module_load("echo", fixture_dirs, 1, &errs));
    expect_msg(&errs, junk, "cannot load");
    weft_errors_clear(&errs);
}

Test(loader, find_respects_buffer_size)
{
    char small[8];
    cr_assert_eq(weft_module_find("echo", fixture_dirs, 1, small, sizeof(small)), -1,
                 "a truncated path must not be reported as found");
}

/* ---- descriptor checks on crafted bytes ---- */

static int dummy_handle(weft_req *req, void *state)
{
    (void)req;
    (void)state;
    return WEFT_OK;
}

static weft_plugin good_desc(void)
{
    weft_plugin d = {WEFT_PLUGIN_HEADER, .name = "crafted", .version = "1", .handle = dummy_handle};
    return d;
}

/* Checks `avail` bytes of `d` placed in a heap block of exactly that size, so
 * ASan catches any read past what the check was told it may read. */
static int check_bytes(const weft_plugin *d, size_t avail, const char *expected, char *why, size_t size)
{
    unsigned char *buf = malloc(avail ? avail : 1);
    cr_assert_not_null(buf);
    memset(buf, 0, avail);
    memcpy(buf, d, avail < sizeof(*d) ? avail : sizeof(*d));
    int rc = weft_descriptor_check(buf, avail, expected, why, size);
    free(buf);
    return rc;
}

Test(loader, descriptor_check_accepts_good)
{
    weft_plugin d = good_desc();
    char why[512] = "";
    cr_assert_eq(check_bytes(&d, sizeof(d), "crafted", why, sizeof(why)), 0, "%s", why);
    cr_assert_eq(check_bytes(&d, sizeof(d), NULL, why, sizeof(why)), 0, "no expected name: %s", why);
    cr_assert_eq(weft_descriptor_check(&d, SIZE_MAX, "crafted", why, sizeof(why)), 0, "%s", why);
    d.handle = NULL;
    d.handle_async = dummy_handle;
    cr_assert_eq(check_bytes(&d, sizeof(d), "crafted", why, sizeof(why)), 0, "async only: %s", why);
}

Test(loader, descriptor_check_accepts_newer_larger_descriptor)
{
    /* A plugin from a later minor version has a bigger descriptor: fine. */
    weft_plugin d = good_desc();
    d.struct_size = sizeof(weft_plugin) + 32;
    char why[512] = "";
    cr_assert_eq(check_bytes(&d, sizeof(weft_plugin) + 32, "crafted", why, sizeof(why)), 0, "%s", why);
}

Test(loader, descriptor_check_rejections)
{
    char why[512];
    weft_plugin d;

    cr_assert_eq(weft_descriptor_check(NULL, SIZE_MAX, "x", why, sizeof(why)), -1);
    cr_assert_not_null(strstr(why, "NULL"), "%s", why);

    d = good_desc();
    d.magic = 0x464c457fu; /* "\x7fELF" */
    cr_assert_eq(check_bytes(&d, sizeof(d), "crafted", why, sizeof(why)), -1);
    cr_assert_not_null(strstr(why, "magic"), "%s", why);
    cr_assert_not_null(strstr(why, "0x464c457f"), "%s", why);

    d = good_desc();
    d.abi_version = 0;
    cr_assert_eq(check_bytes(&d, sizeof(d), "crafted", why, sizeof(why)), -1);
    cr_assert_not_null(strstr(why, "built for plugin ABI 0"), "%s", why);

    d = good_desc();
    d.struct_size = 16;
    cr_assert_eq(check_bytes(&d, sizeof(d), "crafted", why, sizeof(why)), -1);
    cr_assert_not_null(strstr(why, "size 16"), "%s", why);

    d = good_desc();
    d.struct_size = (uint32_t)WEFT_PLUGIN_MIN_SIZE - 1;
    cr_assert_eq(check_bytes(&d, sizeof(d), "crafted", why, sizeof(why)), -1, "one byte short must be refused");

    d = good_desc();
    d.flags = 1;
    cr_assert_eq(check_bytes(&d, sizeof(d), "crafted", why, sizeof(why)), -1);
    cr_assert_not_null(strstr(why, "flags"), "%s", why);

    d = good_desc();
    d.name = NULL;
    cr_assert_eq(check_bytes(&d, sizeof(d), "crafted", why, sizeof(why)), -1);
    cr_assert_not_null(strstr(why, "name"), "%s", why);

    d = good_desc();
    d.name = "Not Valid";
    cr_assert_eq(check_bytes(&d, sizeof(d), NULL, why, sizeof(why)), -1);
    cr_assert_not_null(strstr(why, "name"), "%s", why);

    d = good_desc();
    cr_assert_eq(check_bytes(&d, sizeof(d), "other", why, sizeof(why)), -1);
    cr_assert_not_null(strstr(why, "declares the name 'crafted'"), "%s", why);
    cr_assert_not_null(strstr(why, "'other'"), "%s", why);

    d = good_desc();
    d.handle = NULL;
    cr_assert_eq(check_bytes(&d, sizeof(d), "crafted", why, sizeof(why)), -1);
    cr_assert_not_null(strstr(why, "neither handle nor handle_async"), "%s", why);
}

Test(loader, descriptor_check_truncated_never_overreads)
{
    weft_plugin d = good_desc();
    char why[512];
    /* Every size below a full descriptor is refused, reading only what is there. */
    for (size_t avail = 0; avail < sizeof(d); avail++) {
        why[0] = '\0';
        cr_assert_eq(check_bytes(&d, avail, "crafted", why, sizeof(why)), -1, "accepted with %zu bytes", avail);
        cr_assert_neq(why[0], '\0', "no reason with %zu bytes", avail);
    }
    /* struct_size claims more than is readable. */
    d.struct_size = sizeof(weft_plugin) + 64;
    cr_assert_eq(check_bytes(&d, sizeof(weft_plugin), "crafted", why, sizeof(why)), -1);
    cr_assert_not_null(strstr(why, "size"), "%s", why);
}

Test(loader, descriptor_check_small_why_buffer)
{
    weft_plugin d = good_desc();
    d.flags = 3;
    char why[16];
    memset(why, 'x', sizeof(why));
    cr_assert_eq(check_bytes(&d, sizeof(d), "crafted", why, sizeof(why)), -1);
    cr_assert_lt(strlen(why), sizeof(why));
}

/* ---- generation: entry points, init and options ---- */

static char conf_path[400];

static weft_config *load_conf(const char *routes)
{
    snprintf(conf_path, sizeof(conf_path), "%s/weft.conf", tmpdir);
    FILE *f = fopen(conf_path, "w");
    cr_assert_not_null(f);
    fprintf(f, "plugin_dirs = [ \"%s\" ];\n" /* 1 */
               "routes = (\n"                 /* 2 */
               "%s"                           /* 3... */
               ");\n",
            WEFT_FIXTURE_DIR, routes);
    cr_assert_eq(fclose(f), 0);
    weft_config *cfg = weft_config_load(conf_path, &errs);
    cr_assert_not_null(cfg, "config refused:%s", all_msgs(&errs));
    return cfg;
}

/* Builds (check only: no worker threads) and expects failure. */
static void build_fails(weft_config *cfg, weft_errors *e)
{
    weft_generation *g = weft_generation_build(cfg, 1, 1, e);
    cr_assert_null(g, "generation built despite errors");
    cr_assert_geq(e->count, 1);
    weft_config_free(cfg); /* still ours after a failure */
}

Test(loader, init_failure_reported_with_config_line)
{
    weft_config *cfg = load_conf("  { path = \"/ok\"; plugin = \"echo\"; dispatch = \"reactive\"; },\n" /* 3 */
                                 "  { path = \"/db\"; plugin = \"init_fails\";\n"                    /* 4 */
                                 "    dispatch = \"pool\"; }\n");                                    /* 5 */
    build_fails(cfg, &errs);
    cr_assert_eq(errs.count, 1, "%s", all_msgs(&errs));
    expect_msg(&errs, "weft.conf:4: ", "/db", "init_fails", "database password missing");
    weft_errors_clear(&errs);
}

Test(loader, unread_option_reported)
{
    weft_config *cfg = load_conf("  { path = \"/e/{id}\"; plugin = \"echo\"; dispatch = \"coroutine\";\n" /* 3 */
                                 "    options = {\n"                                                     /* 4 */
                                 "      prefix = \">\";\n"                                               /* 5 */
                                 "      colour = \"red\";\n"                                             /* 6 */
                                 "    }; }\n");                                                          /* 7 */
    build_fails(cfg, &errs);
    cr_assert_eq(errs.count, 1, "%s", all_msgs(&errs));
    expect_msg(&errs, "weft.conf:6: ", "/e/{id}", "'colour' is not an option of plugin 'echo'");
    expect_no_msg(&errs, "'prefix'");
    weft_errors_clear(&errs);
}

Test(loader, wrong_option_type_reported)
{
    weft_config *cfg = load_conf("  { path = \"/e\"; plugin = \"echo\"; dispatch = \"reactive\";\n" /* 3 */
                                 "    options = { param = \"name\";\n"                         /* 4 */
                                 "                prefix = 5; }; }\n");                        /* 5 */
    build_fails(cfg, &errs);
    cr_assert_eq(errs.count, 1, "%s", all_msgs(&errs));
    expect_msg(&errs, "weft.conf:5: ", "/e", "option 'prefix' of plugin 'echo' must be a string");
    weft_errors_clear(&errs);
}

Test(loader, reactive_route_needs_handle_async)
{
    /* init_fails has only handle(): refused before its init could run. */
    weft_config *cfg = load_conf("  { path = \"/r\"; plugin = \"init_fails\"; dispatch = \"reactive\"; }\n"); /* 3 */
    build_fails(cfg, &errs);
    cr_assert_eq(errs.count, 1, "%s", all_msgs(&errs));
    expect_msg(&errs, "weft.conf:3: ", "/r", "plugin 'init_fails' has no handle_async", "reactive");
    expect_no_msg(&errs, "database password missing");
    weft_errors_clear(&errs);
}

Test(loader, refused_plugins_named_with_their_routes)
{
    weft_config *cfg = load_conf("  { path = \"/a\"; plugin = \"wrong_abi\"; dispatch = \"pool\"; },\n"   /* 3 */
                                 "  { path = \"/b\"; plugin = \"dup_name\"; dispatch = \"pool\"; },\n"    /* 4 */
                                 "  { path = \"/c\"; plugin = \"nosuch\"; dispatch = \"pool\"; },\n"      /* 5 */
                                 "  { path = \"/d\"; plugin = \"no_descriptor\"; dispatch = \"pool\"; }\n"); /* 6 */
    build_fails(cfg, &errs);
    expect_msg(&errs, "wrong_abi", "ABI");
    expect_msg(&errs, "weft.conf:3: ", "route /a", "could not be loaded");
    expect_msg(&errs, "weft.conf:4: ", "route /b", "could not be loaded");
    expect_msg(&errs, "weft.conf:5: ", "route /c", "could not be loaded");
    expect_msg(&errs, "weft.conf:6: ", "route /d", "could not be loaded");
    cr_assert_eq(errs.count, 8, "one reason and one route line per plugin:%s", all_msgs(&errs));
    weft_errors_clear(&errs);
}

Test(loader, duplicate_route_names_the_first_line)
{
    weft_config *cfg = load_conf("  { path = \"/x\"; plugin = \"echo\"; dispatch = \"reactive\"; },\n"  /* 3 */
                                 "  { path = \"/x\"; methods = [\"GET\"];\n"                          /* 4 */
                                 "    plugin = \"echo\"; dispatch = \"reactive\"; }\n");              /* 5 */
    build_fails(cfg, &errs);
    cr_assert_eq(errs.count, 1, "%s", all_msgs(&errs));
    expect_msg(&errs, "weft.conf:4: ", "already routed", "by the route at line 3");
    weft_errors_clear(&errs);
}

Test(loader, duplicate_of_a_failed_route_names_the_first_line)
{
    /* The first route's plugin cannot be loaded; the duplicate must still
     * point at line 3, not at itself. */
    weft_config *cfg = load_conf("  { path = \"/x\"; plugin = \"nosuch\"; dispatch = \"reactive\"; },\n" /* 3 */
                                 "  { path = \"/x\"; plugin = \"echo\"; dispatch = \"reactive\"; }\n");   /* 4 */
    build_fails(cfg, &errs);
    expect_msg(&errs, "weft.conf:4: ", "already routed", "by the route at line 3");
    weft_errors_clear(&errs);
}

Test(loader, good_generation_builds_and_releases)
{
    weft_config *cfg = load_conf("  { path = \"/e/{name}\"; plugin = \"echo\"; dispatch = \"reactive\";\n" /* 3 */
                                 "    options = { param = \"name\"; prefix = \"> \"; }; },\n"             /* 4 */
                                 "  { path = \"/f\"; methods = [\"POST\"]; plugin = \"echo\"; dispatch = \"coroutine\"; }\n");
    weft_generation *g = weft_generation_build(cfg, 7, 1, &errs);
    cr_assert_not_null(g, "%s", all_msgs(&errs));
    cr_assert_eq(errs.count, 0);
    cr_assert_eq(g->id, 7);
    cr_assert_eq(g->n_routes, 2);
    cr_assert_eq(g->n_modules, 1, "one module shared by both routes");
    cr_assert_eq(g->routes[0].module, g->routes[1].module);
    cr_assert(g->routes[0].initialised);
    cr_assert_not_null(g->routes[0].state);
    cr_assert_not_null(strstr(g->routes[0].label, "echo"));
    weft_match m;
    weft_router_match(g->router, "/e/abc", 6, WEFT_M_GET, &m);
    cr_assert_eq(m.status, 200);
    cr_assert_eq(m.route, &g->routes[0]);
    weft_router_match(g->router, "/f", 2, WEFT_M_GET, &m);
    cr_assert_eq(m.status, 405);
    weft_generation_release(g); /* runs fini, unloads, frees cfg */
}

/* The echo fixture answers through the host table exactly as documented. */
static void run_echo(int (*handler)(weft_req *, void *), void *state, const char *query, const char *want_body,
                     int want_status)
{
    weft_req *r = weft_req_new();
    cr_assert_not_null(r);
    weft_kv headers[] = {{"X-Test", "T1"}};
    r->method = "POST";
    r->path = "/e/abc";
    r->query = query;
    r->headers = headers;
    r->n_headers = query != NULL ? 1 : 0;
    r->params[0] = (weft_kv){"name", "abc"};
    r->n_params = 1;
    r->body = "pay\nload";
    r->body_len = 8;
    cr_assert_eq(handler(r, state), WEFT_OK);
    cr_assert_eq(r->status, want_status);
    cr_assert_eq(r->n_res_headers, 1);
    cr_assert_str_eq(r->res_headers[0].name, "content-type");
    cr_assert_str_eq(r->res_headers[0].value, "text/plain");
    cr_assert_eq(r->res_len, strlen(want_body), "body:\n%.*s", (int)r->res_len, r->res_body);
    cr_assert_eq(memcmp(r->res_body, want_body, r->res_len), 0, "body:\n%.*s", (int)r->res_len, r->res_body);
    weft_req_free(r);
}

Test(loader, echo_fixture_answers)
{
    weft_config *cfg = load_conf("  { path = \"/e/{name}\"; plugin = \"echo\"; dispatch = \"reactive\";\n"
                                 "    options = { param = \"name\"; prefix = \"> \"; }; },\n"
                                 "  { path = \"/d/{id}\"; plugin = \"echo\"; dispatch = \"pool\"; }\n");
    weft_generation *g = weft_generation_build(cfg, 1, 1, &errs);
    cr_assert_not_null(g, "%s", all_msgs(&errs));
    const weft_route *custom = &g->routes[0], *plain = &g->routes[1];
    const weft_plugin *d = &custom->module->desc;
    run_echo(d->handle, custom->state, "q=hi+there&status=201",
             "> method=POST\n"
             "> path=/e/abc\n"
             "> param.name=abc\n"
             "> query.q=hi there\n"
             "> header.x-test=T1\n"
             "> body=pay\nload\n",
             201);
    run_echo(d->handle_async, custom->state, "q=x", /* same answer from the reactive entry point */
             "> method=POST\n> path=/e/abc\n> param.name=abc\n> query.q=x\n> header.x-test=T1\n> body=pay\nload\n",
             200);
    /* Defaults: param "id" (absent here), no prefix, no query, no header. */
    run_echo(d->handle, plain->state, NULL,
             "method=POST\npath=/e/abc\nparam.id=(none)\nquery.q=(none)\nheader.x-test=(none)\nbody=pay\nload\n", 200);
    weft_generation_release(g);
}
