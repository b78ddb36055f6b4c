/*
 * Tests for server/ops/crash.c: whose code a fatal signal came from. A
 * crash record quarantines a plugin build at the next start, so it must be
 * written when the plugin's code faulted, and never when weft's own did
 * while a plugin's request was running (issue 44, item 3: an h2o assertion
 * reached through a flush quarantined the plugin).
 *
 * This test binary links weft's code (weftcore, h2o inside) as the server
 * does: its own image is the host's. The plugin is the faulty fixture,
 * loaded by the real loader.
 */
#include "ops/crash.h"

#undef NDEBUG /* __assert_fail, declared by assert.h, whatever the build */
#include <assert.h>
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/sigsafe.h"
#include "config/config.h"
#include "dispatch/dispatch.h"
#include "harness.h"
#include "plugin/module.h"
#include "plugin/quarantine.h"
#include "unit.h"
#include "unitloop.h"

static char *fixture_dirs[] = {WEFT_FIXTURE_DIR};

static void setup(void)
{
    unsetenv("WEFT_PLUGIN_PATH");
    wt_unit_setup("crash");
}

static void teardown(void)
{
    weft_module_cleanup();
    wt_unit_teardown();
}

TestSuite(crash, .init = setup, .fini = teardown, .timeout = 60);

/* ---- weft_crash_blame on hand-made stacks ---- */

/* A function of the host image (this binary), and one of the C library. */
static __attribute__((noinline)) int host_function(int x) { return x * 3 + 1; }

static const void *libc_function(void)
{
    const void *f = dlsym(RTLD_DEFAULT, "abort");
    Dl_info self, at;
    cr_assert(f != NULL && dladdr(f, &at) != 0 && dladdr((const void *)host_function, &self) != 0);
    cr_assert_neq(at.dli_fbase, self.dli_fbase, "abort() resolved into the test binary");
    return f;
}

Test(crash, the_innermost_frame_of_weft_or_the_plugin_decides)
{
    void *dl = dlopen(WEFT_FIXTURE_DIR "/faulty.so", RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(dl, "%s", dlerror());
    const void *plugin = dlsym(dl, "weft_plugin_entry"), *host = (const void *)host_function, *libc = libc_function();
    Dl_info info;
    cr_assert(dladdr(plugin, &info) != 0);
    const void *base = info.dli_fbase;
    struct {
        const void *addrs[4];
        int n, complete, anywhere;
        weft_blame want;
        const char *what;
    } cases[] = {
        {{plugin, host}, 2, 1, 0, WEFT_BLAME_PLUGIN, "a fault in the plugin"},
        {{host, plugin}, 2, 1, 0, WEFT_BLAME_HOST, "a fault in a host call the plugin made"},
        {{libc, libc, host, plugin}, 4, 1, 0, WEFT_BLAME_HOST, "abort <- __assert_fail <- h2o <- the plugin"},
        {{libc, plugin, host}, 3, 1, 0, WEFT_BLAME_PLUGIN, "the plugin's own assert or strlen(NULL)"},
        {{NULL, host}, 2, 1, 0, WEFT_BLAME_HOST, "a call through NULL from the host"},
        {{libc}, 1, 1, 0, WEFT_BLAME_UNKNOWN, "nothing but the C library"},
        {{libc, host, plugin, host}, 4, 1, 1, WEFT_BLAME_PLUGIN, "a stuck loop in a host call of the plugin"},
        {{libc, host}, 2, 1, 1, WEFT_BLAME_HOST, "a stuck loop with no plugin frame on the whole stack"},
        {{libc, host}, 2, 0, 1, WEFT_BLAME_UNKNOWN, "a stuck loop, the stack seen only in part"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        cr_expect_eq(weft_crash_blame(cases[i].addrs, cases[i].n, cases[i].complete, base, cases[i].anywhere),
                     cases[i].want, "%s", cases[i].what);
    cr_expect_eq(host_function(1), 4);
    dlclose(dl);
}

/* ---- the real handler, in a child that dies of it ---- */

/* What the host does wrong, called by the plugin's handler. */
static void host_segfaults(void) { *(volatile int *)(uintptr_t)host_function(5) = 1; }
static void host_assertion_fails(void)
{
    /* What assert() does when it fails, whether or not this build has NDEBUG. */
    __assert_fail("!\"h2o_data must only be called when there is progress\"", "lib/http1.c", 1114, "finalostream_send");
}

/* Runs the faulty plugin's handler with `fn` as its state inside the crash
 * report, in a child; returns the report's text (malloc'd). */
static char *crash_with(weft_module *m, void (*fn)(void))
{
    char state[300], report[320];
    snprintf(state, sizeof(state), "%s/state", wt_tmpdir);
    snprintf(report, sizeof(report), "%s/report.txt", wt_tmpdir);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        /* The previous handler, run after the report, is the default: the child dies of the signal. */
        signal(SIGSEGV, SIG_DFL);
        signal(SIGABRT, SIG_DFL);
        weft_config cfg = {.state_dir = state};
        weft_quarantine_configure(&cfg);
        int fd = open(report, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        weft_ss_set_report_fd(fd);
        dup2(fd, 2); /* glibc's assertion line too */
        weft_crash_report_install();
        static wt_route rt;
        wt_route_init(&rt, &m->desc, WEFT_DISPATCH_REACTIVE, 0, 0);
        weft_route_set_module(&rt.route, m);
        static weft_req r;
        r.route = &rt.route;
        r.method = "GET";
        r.path = "/t";
        weft_dispatch_running = &r;
        void *arg = NULL;
        memcpy(&arg, &fn, sizeof(arg));
        m->desc.handle(&r, arg);
        _exit(0);
    }
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    /* Killed by the signal (ASan's handler, the previous one there, exits instead). */
    cr_assert(WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) != 0), "the child survived: %d", status);
    char *text = wt_read_file(report);
    cr_assert_not_null(text);
    return text;
}

static int record_exists(void)
{
    char rec[320];
    snprintf(rec, sizeof(rec), "%s/state/crash-faulty.rec", wt_tmpdir);
    int yes = access(rec, F_OK) == 0;
    unlink(rec);
    return yes;
}

Test(crash, a_fault_is_recorded_against_the_plugin_only_when_its_code_faulted)
{
    weft_module *m = weft_module_load("faulty", fixture_dirs, 1, &wt_errs);
    cr_assert_not_null(m, "%s", wt_errs_text(&wt_errs));
    struct {
        void (*fn)(void);
        int plugin_s;
        const char *signal, *what;
    } cases[] = {
        {NULL, 1, "SIGSEGV", "the plugin dereferences a bad pointer"},
        {abort, 1, "SIGABRT", "the plugin calls abort() (its own assert)"},
        {host_segfaults, 0, "SIGSEGV", "a host function the plugin called faults"},
        {host_assertion_fails, 0, "SIGABRT", "an assertion in the host (h2o) fails"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *text = crash_with(m, cases[i].fn);
        cr_expect(strstr(text, cases[i].signal) != NULL && strstr(text, "in route /t (plugin faulty 1.0.0") != NULL,
                  "%s: %s", cases[i].what, text);
        if (cases[i].plugin_s) {
            cr_expect(record_exists(), "%s: no crash record: %s", cases[i].what, text);
            cr_expect(strstr(text, "the plugin is quarantined at the next start") != NULL, "%s: %s", cases[i].what, text);
        } else {
            cr_expect(!record_exists(), "%s: a crash record against the plugin: %s", cases[i].what, text);
            cr_expect(strstr(text, "it came from weft's own code (weft or its h2o), not the plugin's: no crash record") !=
                          NULL,
                      "%s: %s", cases[i].what, text);
        }
        free(text);
    }
    weft_module_release(m);
}
