/*
 * Tests for server/plugin/module.c: finding, loading and checking plugins,
 * and the directories they may come from. (The plugin-facing half of
 * generation.c, entry points, init and options, is in generation.c.)
 * Fixture plugins come from tests/plugins/, built into WEFT_FIXTURE_DIR.
 */
#include "plugin/module.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
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
#include "harness.h"
#include "unit.h"

static char *fixture_dirs[] = {WEFT_FIXTURE_DIR};

static void loader_setup(void)
{
    /* The developer's environment must not shadow the fixtures. */
    unsetenv("WEFT_PLUGIN_PATH");
    wt_unit_setup("loader");
}

static void loader_teardown(void)
{
    weft_module_cleanup(); /* the loader's private directory for plugin copies */
    wt_unit_teardown();
}

TestSuite(loader, .init = loader_setup, .fini = loader_teardown);

#define expect_msg wt_expect_msg
#define expect_no_msg wt_expect_no_msg

static void fixture_path(char *buf, size_t size, const char *name)
{
    snprintf(buf, size, "%s/%s.so", WEFT_FIXTURE_DIR, name);
}

/* Loading a fixture that must be refused: one message, naming name and file. */
static void expect_refused(const char *name, const char *reason)
{
    char path[512];
    fixture_path(path, sizeof(path), name);
    weft_module *m = weft_module_load(name, fixture_dirs, 1, &wt_errs);
    cr_assert_null(m, "%s was loaded", name);
    cr_assert_eq(wt_errs.count, 1, "%s: %zu messages:%s", name, wt_errs.count, wt_errs_text(&wt_errs));
    char quoted[128];
    snprintf(quoted, sizeof(quoted), "plugin '%s'", name);
    expect_msg(&wt_errs, quoted, path, reason);
    weft_errors_clear(&wt_errs);
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
    weft_module *m = weft_module_load("echo", fixture_dirs, 1, &wt_errs);
    cr_assert_not_null(m, "echo refused:%s", wt_errs_text(&wt_errs));
    cr_assert_eq(wt_errs.count, 0);
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
    snprintf(junk, sizeof(junk), "%s/junk.so", wt_tmpdir);
    write_text(junk, "this is not an ELF file\n");
    char *dirs[] = {wt_tmpdir};
    cr_assert_null(weft_module_load("junk", dirs, 1, &wt_errs));
    cr_assert_eq(wt_errs.count, 1);
    expect_msg(&wt_errs, "plugin 'junk'", junk, "cannot load");
    weft_errors_clear(&wt_errs);
}

Test(loader, directory_named_like_a_plugin_is_not_found)
{
    char sub[400];
    snprintf(sub, sizeof(sub), "%s/dir.so", wt_tmpdir);
    cr_assert_eq(mkdir(sub, 0700), 0);
    char *dirs[] = {wt_tmpdir};
    cr_assert_null(weft_module_load("dir", dirs, 1, &wt_errs));
    expect_msg(&wt_errs, "plugin 'dir'", "dir.so not found");
    weft_errors_clear(&wt_errs);
}

Test(loader, not_found_lists_searched_dirs)
{
    char *dirs[] = {WEFT_FIXTURE_DIR, "/nonexistent/weft-plugins"};
    cr_assert_null(weft_module_load("nosuch", dirs, 2, &wt_errs));
    cr_assert_eq(wt_errs.count, 1);
    expect_msg(&wt_errs, "plugin 'nosuch'", "nosuch.so not found", WEFT_FIXTURE_DIR, "/nonexistent/weft-plugins");
    weft_errors_clear(&wt_errs);

    setenv("WEFT_PLUGIN_PATH", wt_tmpdir, 1);
    cr_assert_null(weft_module_load("nosuch", dirs, 2, &wt_errs));
    expect_msg(&wt_errs, "nosuch.so not found", wt_tmpdir, WEFT_FIXTURE_DIR);
    weft_errors_clear(&wt_errs);
}

Test(loader, not_found_without_any_dirs)
{
    cr_assert_null(weft_module_load("echo", NULL, 0, &wt_errs));
    expect_msg(&wt_errs, "plugin 'echo'", "not found", "WEFT_PLUGIN_PATH");
    weft_errors_clear(&wt_errs);
}

Test(loader, invalid_names_refused_before_any_lookup)
{
    static const char *const bad[] = {"../x", "../echo", "a/b", "/etc/passwd", "", ".hidden", "Echo", "-x", "e cho"};
    /* "../echo" would even exist relative to a plugin dir's subfolder: never look. */
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cr_assert_null(weft_module_load(bad[i], fixture_dirs, 1, &wt_errs), "'%s' loaded", bad[i]);
        char quoted[64];
        snprintf(quoted, sizeof(quoted), "plugin '%s'", bad[i]);
        expect_msg(&wt_errs, quoted, "invalid plugin name");
        weft_errors_clear(&wt_errs);
    }
}

Test(loader, plugin_path_env_searched_first)
{
    char copy[400], from[512];
    snprintf(copy, sizeof(copy), "%s/echo.so", wt_tmpdir);
    fixture_path(from, sizeof(from), "echo");
    wt_copy_file(from, copy);
    char env[800];
    snprintf(env, sizeof(env), "/nonexistent/a::%s", wt_tmpdir); /* an empty entry is skipped */
    setenv("WEFT_PLUGIN_PATH", env, 1);

    char found[4096];
    cr_assert_eq(weft_module_find("echo", fixture_dirs, 1, found, sizeof(found)), 0);
    cr_assert_str_eq(found, copy);

    weft_module *m = weft_module_load("echo", fixture_dirs, 1, &wt_errs);
    cr_assert_not_null(m, "%s", wt_errs_text(&wt_errs));
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
    snprintf(junk, sizeof(junk), "%s/echo.so", wt_tmpdir);
    write_text(junk, "garbage");
    setenv("WEFT_PLUGIN_PATH", wt_tmpdir, 1);
    cr_assert_null(weft_module_load("echo", fixture_dirs, 1, &wt_errs));
    expect_msg(&wt_errs, junk, "cannot load");
    weft_errors_clear(&wt_errs);
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


/* ---- `weft -t`: plugin names are never paths, plugin directories must be safe ---- */

static int check_conf(const char *text, char **out)
{
    wt_server s = {0};
    wt_write_conf(&s, text);
    const char *args[] = {"-t", "-c", s.conf, NULL};
    int rc = wt_run(out, args, NULL);
    unlink(s.conf);
    rmdir(s.dir);
    return rc;
}

Test(loader, plugin_names_are_never_paths)
{
    static const char *const names[] = {"../x", "/tmp/x", "x/../../y", "..", "hello.so", "./hello", "Hello",
                                        "hello\\n", ""};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        char text[512], *out;
        snprintf(text, sizeof(text),
                 "listen = [\"127.0.0.1:0\"];\nadmin = false;\n"
                 "routes = ({ path = \"/x\"; plugin = \"%s\"; dispatch = \"reactive\"; });\n",
                 names[i]);
        int rc = check_conf(text, &out);
        cr_assert_eq(rc, 1, "plugin = \"%s\": exit %d\n%s", names[i], rc, out);
        cr_assert(strstr(out, ":3:") != NULL, "plugin = \"%s\": no line in %s", names[i], out);
        cr_assert(strstr(out, "no paths") != NULL || strstr(out, "plugin name") != NULL, "plugin = \"%s\": %s",
                  names[i], out);
        free(out);
    }
}

/* Copies a plugin into dir/name with the given mode; returns the path (static). */
static char *install_copy(const char *from, const char *dir, const char *name, mode_t mode)
{
    static char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    wt_copy_file(from, path);
    chmod(path, mode);
    return path;
}

/*
 * A plugin directory that others (or the group) can write to is refused: in
 * it, anyone could put code into the server. So is a .so writable by others,
 * and so is a link from a safe directory to a file in an unsafe one. The
 * plugin is named "wwtest" (a copy of hello.so), which no directory in
 * WEFT_PLUGIN_PATH holds, so the configured directory is the one searched.
 */
Test(loader, unsafe_plugin_directories_are_refused)
{
    char base[] = "/tmp/weft-ww-XXXXXX";
    cr_assert_not_null(mkdtemp(base));
    chmod(base, 0755);
    char hello[512];
    snprintf(hello, sizeof(hello), "%s/hello.so", WEFT_PLUGIN_DIR);

    static const struct {
        const char *dir;
        mode_t dir_mode, file_mode;
        const char *via; /* plugin_dirs entry, relative to base ("" = the dir itself) */
        const char *why;
    } cases[] = {
        {"ww", 0777, 0644, "ww", "writable by others"},
        {"sticky", 01777, 0644, "sticky", "writable by others"},
        {"gw", 0775, 0644, "gw", "writable by its group"},
        {"filew", 0755, 0666, "filew", "writable by others"},
        {"ww2", 0777, 0644, "safe/../ww2", "writable by others"}, /* a '..' in plugin_dirs changes nothing */
    };
    char safe[300];
    snprintf(safe, sizeof(safe), "%s/safe", base);
    cr_assert_eq(mkdir(safe, 0755), 0);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char dir[300];
        snprintf(dir, sizeof(dir), "%s/%s", base, cases[i].dir);
        cr_assert_eq(mkdir(dir, 0755), 0, "%s: %s", dir, strerror(errno));
        install_copy(hello, dir, "wwtest.so", cases[i].file_mode);
        chmod(dir, cases[i].dir_mode);
        char text[1024], *out;
        snprintf(text, sizeof(text),
                 "listen = [\"127.0.0.1:0\"];\nadmin = false;\nplugin_dirs = [\"%s/%s\"];\n"
                 "routes = ({ path = \"/x\"; plugin = \"wwtest\"; dispatch = \"reactive\"; });\n",
                 base, cases[i].via);
        int rc = check_conf(text, &out);
        cr_assert_eq(rc, 1, "%s: exit %d\n%s", cases[i].dir, rc, out);
        cr_assert(strstr(out, "refused") != NULL && strstr(out, cases[i].why) != NULL, "%s: want '%s' in:\n%s",
                  cases[i].dir, cases[i].why, out);
        free(out);
    }

    /* Control: the same copy in a safe directory passes the permission checks
     * and fails only on its descriptor's name (it is hello.so inside). */
    install_copy(hello, safe, "wwtest.so", 0644);
    char text[1024], *out;
    snprintf(text, sizeof(text),
             "listen = [\"127.0.0.1:0\"];\nadmin = false;\nplugin_dirs = [\"%s\"];\n"
             "routes = ({ path = \"/x\"; plugin = \"wwtest\"; dispatch = \"reactive\"; });\n",
             safe);
    int rc = check_conf(text, &out);
    cr_assert_eq(rc, 1, "%s", out);
    cr_assert(strstr(out, "declares the name 'hello'") != NULL && strstr(out, "writable") == NULL, "%s", out);
    free(out);

    /* A symbolic link in a safe directory to a .so in an unsafe one: whoever
     * can write the unsafe directory decides what the link loads. */
    char link_dir[300], target[600], link[600];
    snprintf(link_dir, sizeof(link_dir), "%s/links", base);
    cr_assert_eq(mkdir(link_dir, 0755), 0);
    snprintf(target, sizeof(target), "%s/ww/wwtest.so", base);
    snprintf(link, sizeof(link), "%s/wwtest.so", link_dir);
    cr_assert_eq(symlink(target, link), 0, "%s", strerror(errno));
    snprintf(text, sizeof(text),
             "listen = [\"127.0.0.1:0\"];\nadmin = false;\nplugin_dirs = [\"%s\"];\n"
             "routes = ({ path = \"/x\"; plugin = \"wwtest\"; dispatch = \"reactive\"; });\n",
             link_dir);
    rc = check_conf(text, &out);
    int refused = rc == 1 && strstr(out, "writable by others") != NULL;
    char *copy = strdup(out);
    free(out);
    wt_rm_rf(base);
    cr_assert(refused, "a link into a world-writable directory was not refused (exit %d):\n%s", rc, copy);
    free(copy);
}

/* ---- copies prepared for a forked probe child ---- */

static int private_files(void)
{
    char cmd[1200];
    snprintf(cmd, sizeof(cmd), "ls -A '%s' | wc -l", weft_module_private_dir());
    FILE *p = popen(cmd, "r");
    int n = -1;
    cr_assert_not_null(p);
    cr_assert_eq(fscanf(p, "%d", &n), 1);
    pclose(p);
    return n;
}

/* The server loads the very copy the probe ran, even when the original was
 * replaced in between; the copy is gone once loaded. */
Test(loader, a_prepared_copy_is_what_gets_loaded)
{
    char orig[400], junk[400], from[512];
    snprintf(orig, sizeof(orig), "%s/echo.so", wt_tmpdir);
    snprintf(junk, sizeof(junk), "%s/junk.tmp", wt_tmpdir);
    fixture_path(from, sizeof(from), "echo");
    wt_copy_file(from, orig);
    struct stat was;
    cr_assert_eq(stat(orig, &was), 0);
    char *dirs[] = {wt_tmpdir};
    weft_module_prepare("echo", dirs, 1);
    cr_assert_eq(private_files(), 1);
    write_text(junk, "not a shared object");
    cr_assert_eq(rename(junk, orig), 0);
    weft_module *m = weft_module_load("echo", dirs, 1, &wt_errs);
    cr_assert_not_null(m, "the prepared copy was not used:%s", wt_errs_text(&wt_errs));
    cr_assert_eq(m->size, was.st_size);
    cr_assert_eq(m->ino, was.st_ino);
    cr_assert_eq(private_files(), 0);
    weft_module_release(m);
}

/* What no load took (a refused build) is removed; a probe child keeps them. */
Test(loader, prepared_copies_are_dropped_unless_kept)
{
    weft_module_prepare("echo", fixture_dirs, 1);
    weft_module_prepare("nosuch", fixture_dirs, 1); /* nothing: the load reports it */
    cr_assert_eq(private_files(), 1);
    weft_module_prepared_drop();
    cr_assert_eq(private_files(), 0);

    weft_module_prepare("echo", fixture_dirs, 1);
    weft_module_prepared_keep();
    weft_module *m = weft_module_load("echo", fixture_dirs, 1, &wt_errs);
    cr_assert_not_null(m, "%s", wt_errs_text(&wt_errs));
    cr_assert_eq(private_files(), 1, "a probe child leaves the parent's copy");
    weft_module_release(m);
    char cmd[1200];
    snprintf(cmd, sizeof(cmd), "rm -f '%s'/*", weft_module_private_dir());
    cr_assert_eq(system(cmd), 0);
}
