/*
 * A bad plugin never takes weft down: truncated files are refused before
 * dlopen with the reason, under load, and the previous version keeps
 * answering; a symlink loop is called a loop.
 */
#include <criterion/criterion.h>
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

static wt_server srv;
static char plugdir[128];

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc(*len);
    cr_assert_eq(fread(buf, 1, *len, f), *len);
    fclose(f);
    return buf;
}

/* The operator's way: write a hidden file, rename it over ver.so. */
static void install_prefix(const char *src, size_t keep)
{
    size_t len;
    char *buf = slurp(src, &len);
    if (keep > len)
        keep = len;
    char tmp[256], dst[256];
    snprintf(tmp, sizeof(tmp), "%s/.ver.tmp", plugdir);
    snprintf(dst, sizeof(dst), "%s/ver.so", plugdir);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0755);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, buf, keep), (ssize_t)keep);
    close(fd);
    free(buf);
    cr_assert_eq(rename(tmp, dst), 0);
}

static const char *ver_build(char tag)
{
    static char path[2][512];
    char *p = path[tag == 'B'];
    snprintf(p, 512, "%s/ver_%c/ver.so", WEFT_FIXTURE_DIR, tag);
    return p;
}

static void setup(void)
{
    snprintf(plugdir, sizeof(plugdir), "/tmp/weft-badplugin-XXXXXX");
    cr_assert_not_null(mkdtemp(plugdir));
    install_prefix(ver_build('A'), (size_t)-1);
    char conf[2048];
    snprintf(conf, sizeof(conf),
             "threads = 2;\n" WT_LISTEN "\n" WT_ADMIN "\n"
             "plugin_dirs = [\"%s\"];\n"
             "routes = (\n"
             "  { path = \"/ver\"; plugin = \"ver\"; dispatch = \"coroutine\"; },\n"
             WT_HELLO_ROUTE "\n"
             ");\n",
             plugdir);
    wt_start(&srv, conf);
}

static void teardown(void)
{
    if (srv.pid > 0)
        wt_stop(&srv);
    char cmd[200];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", plugdir);
    cr_expect_eq(system(cmd), 0);
}

TestSuite(badplugin, .init = setup, .fini = teardown, .timeout = 240);

static void expect_body(const char *path, const char *want)
{
    wt_resp r;
    cr_assert_eq(wt_http(&srv, "GET", path, NULL, &r), 0);
    cr_assert_eq(r.status, 200, "%s: %ld %s", path, r.status, r.body);
    cr_assert(strstr(r.body, want) != NULL, "%s answered '%s', wanted '%s'", path, r.body, want);
    wt_resp_free(&r);
}

static void wait_body(const char *path, const char *want, double limit_ms)
{
    double t0 = wt_now_ms();
    for (;;) {
        wt_resp r;
        int ok = wt_http(&srv, "GET", path, NULL, &r) == 0 && r.status == 200 && strstr(r.body, want) != NULL;
        if (r.body != NULL)
            wt_resp_free(&r);
        if (ok)
            return;
        cr_assert_lt(wt_now_ms() - t0, limit_ms, "%s never answered '%s'", path, want);
        usleep(20000);
    }
}

/* Number of times `needle` occurs in the log. */
static int log_count(const char *needle)
{
    char *log = wt_read_log(&srv);
    int n = 0;
    for (const char *p = log; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    free(log);
    return n;
}

static void wait_log_count(const char *needle, int n, double limit_ms)
{
    double t0 = wt_now_ms();
    while (log_count(needle) < n) {
        char *log = wt_read_log(&srv);
        cr_assert_lt(wt_now_ms() - t0, limit_ms, "no %d x '%s' in the log:\n%s", n, needle, log);
        free(log);
        usleep(20000);
    }
}

Test(badplugin, truncated_files_are_refused_under_load_and_the_old_version_serves)
{
    size_t len;
    char *img = slurp(ver_build('B'), &len);
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)img;
    size_t in_segment = 0, phoff = eh->e_phoff;
    for (unsigned i = 0; i < eh->e_phnum; i++) {
        const Elf64_Phdr *ph = (const Elf64_Phdr *)(img + eh->e_phoff + i * sizeof(Elf64_Phdr));
        if (ph->p_type == PT_LOAD && ph->p_filesz > 64)
            in_segment = ph->p_offset + ph->p_filesz / 2;
    }
    free(img);
    cr_assert_gt(in_segment, phoff + 64);
    struct {
        size_t keep;
        const char *why;
    } cuts[] = {
        {40, "truncated: the ELF header needs 64 bytes, file is 40 bytes"},
        {phoff + 20, "truncated: program headers end at"},
        {in_segment, "truncated: segment"},
    };

    const char *paths[] = {"/ver", "/hello"};
    wt_load *load = wt_load_start(&srv, 8, paths, 2);
    for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
        install_prefix(ver_build('B'), cuts[i].keep);
        wait_log_count("keeps serving", (int)i + 1, 10000);
        char *log = wt_read_log(&srv);
        cr_assert(strstr(log, cuts[i].why) != NULL, "cut at %zu: want '%s' in:\n%s", cuts[i].keep, cuts[i].why, log);
        cr_assert(strstr(log, "plugin 'ver' (") != NULL && strstr(log, "/ver.so): cannot load: truncated") != NULL,
                  "the file is named: %s", log);
        free(log);
        expect_body("/ver", "ver=A");
    }
    install_prefix(ver_build('B'), (size_t)-1);
    wait_body("/ver", "ver=B", 10000);
    long ok, failed;
    char last_failure[256];
    wt_load_stop(load, &ok, &failed, last_failure, sizeof(last_failure));
    cr_assert_eq(failed, 0, "%ld of %ld requests failed (last: %s)", failed, ok + failed, last_failure);
    cr_assert_gt(ok, 20);
    char *log = wt_read_log(&srv);
    cr_assert(strstr(log, "SIGBUS") == NULL, "%s", log);
    free(log);
    wt_finish(&srv);
}

Test(badplugin, a_symlink_loop_is_reported_as_a_loop)
{
    char link[256];
    snprintf(link, sizeof(link), "%s/loopy.so", plugdir);
    cr_assert_eq(symlink(link, link), 0);
    wt_server s = {0};
    char conf[1024];
    snprintf(conf, sizeof(conf),
             WT_LISTEN "\nplugin_dirs = [\"%s\"];\n"
             "routes = ({ path = \"/l\"; plugin = \"loopy\"; dispatch = \"reactive\"; });\n",
             plugdir);
    wt_write_conf(&s, conf);
    const char *args[] = {"-t", "-c", s.conf, NULL};
    char *out;
    cr_assert_eq(wt_run(&out, args, NULL), 1, "%s", out);
    cr_assert(strstr(out, "loopy.so is a symlink loop (ELOOP") != NULL, "%s", out);
    cr_assert(strstr(out, "not found") == NULL, "%s", out);
    free(out);
    wt_finish(&srv);
}
