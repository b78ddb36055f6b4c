/*
 * Under systemd, standard error is the journal (JOURNAL_STREAM is set) and
 * every line weft writes there must carry its "<N>" priority: `weft -t`'s
 * reasons (ExecStartPre, ExecReload) and the crash line with its backtrace,
 * or `journalctl -p warning` never shows why a start or a reload failed.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

static const char *const journal_env[] = {"JOURNAL_STREAM=8:123456", NULL};

/* Every non-empty line starts with "<digit>". */
static void assert_all_prefixed(const char *out)
{
    for (const char *p = out; *p != '\0';) {
        const char *nl = strchr(p, '\n');
        size_t len = nl != NULL ? (size_t)(nl - p) : strlen(p);
        cr_assert(len == 0 || (len >= 3 && p[0] == '<' && p[1] >= '0' && p[1] <= '7' && p[2] == '>'),
                  "a line without its priority: '%.*s' in:\n%s", (int)len, p, out);
        p += len + (nl != NULL);
    }
}

Test(journal, check_output_carries_priorities, .timeout = 60)
{
    wt_server s = {0};
    wt_write_conf(&s, "threads = 1;\n" WT_LISTEN "\nthreads = \"many\";\n");
    const char *const args[] = {"-t", "-c", s.conf, NULL};
    char *out = NULL;
    cr_assert_eq(wt_run(&out, args, journal_env), 1, "%s", out);
    assert_all_prefixed(out);
    char want[400];
    snprintf(want, sizeof(want), "<3>weft: %s:", s.conf);
    cr_assert(strstr(out, want) != NULL, "the reason is an error with FILE:LINE (%s):\n%s", want, out);
    cr_assert(strstr(out, "<3>weft: configuration file") != NULL, "%s", out);
    free(out);

    wt_write_conf(&s, "threads = 1;\n" WT_LISTEN "\nroutes = (" WT_HELLO_ROUTE ");\n");
    cr_assert_eq(wt_run(&out, args, journal_env), 0, "%s", out);
    assert_all_prefixed(out);
    cr_assert(strstr(out, "<6>weft: configuration file") != NULL, "%s", out);
    free(out);

    /* Without the journal: no prefix, as before. */
    cr_assert_eq(wt_run(&out, args, NULL), 0, "%s", out);
    cr_assert(strstr(out, "weft: configuration file") != NULL && strstr(out, "<6>") == NULL, "%s", out);
    free(out);
    wt_rm_rf(s.dir);
}

Test(journal, crash_line_and_backtrace_carry_priorities, .timeout = 60)
{
    wt_server s = {0};
    wt_write_conf(&s, "");
    char conf[1024];
    snprintf(conf, sizeof(conf),
             "threads = 1;\n" WT_LISTEN "\nplugin_dirs = [\"%s/crashy\"];\n"
             "routes = ( { path = \"/c\"; plugin = \"crashy\"; dispatch = \"reactive\"; } );\n",
             WEFT_FIXTURE_DIR);
    wt_start_env(&s, conf, journal_env);
    wt_resp r;
    if (wt_http(&s, "GET", "/c?crash=1", NULL, &r) == 0)
        wt_resp_free(&r);
    double t0 = wt_now_ms();
    int status;
    while (waitpid(s.pid, &status, WNOHANG) == 0) {
        cr_assert_lt(wt_now_ms() - t0, 20000.0, "weft survived a segfaulting handler?");
        usleep(10000); /* poll of the process exit */
    }
    s.pid = 0;
    char *log = wt_read_log(&s);
    const char *fatal = strstr(log, "weft: FATAL: SIGSEGV in route /c");
    cr_assert_not_null(fatal, "%s", log);
    cr_assert(fatal - log >= 3 && strncmp(fatal - 3, "<2>", 3) == 0 && (fatal - 3 == log || fatal[-4] == '\n'),
              "the FATAL line is critical:\n%s", log);
    const char *frame = strchr(fatal, '\n');
    cr_assert(frame != NULL && strncmp(frame + 1, "<2>", 3) == 0, "backtrace frames carry it too:\n%s", log);
    /* The server's own lines before the crash: each with its priority. */
    char *head = strndup(log, (size_t)(fatal - 3 - log));
    assert_all_prefixed(head);
    free(head);
    free(log);
    wt_rm_rf(s.dir);
}
