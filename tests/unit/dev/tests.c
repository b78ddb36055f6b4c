/*
 * Tests for server/dev/tests.c, `weft dev`'s continuous testing: how a run's
 * output is read (weft_dev_tests_summarize: Criterion's closing line and its
 * failure lines), and one run end to end on the test thread, of a project
 * whose Makefile's `test` target only prints, so that the verdict is seen
 * to come from make's exit status and the failures from the output.
 */
#include "dev/tests.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "base/timer.h"
#include "harness.h"
#include "unit.h"

static char *failures;

static void teardown(void)
{
    free(failures);
    failures = NULL;
    weft_dev_projects_free();
    wt_unit_teardown();
}

static void setup(void) { wt_unit_setup("devtests"); }
TestSuite(devtests, .init = setup, .fini = teardown, .timeout = 60);

static const char *summary_of(const char *out)
{
    static char summary[96];
    free(failures);
    failures = NULL;
    weft_dev_tests_summarize(out, summary, sizeof(summary), &failures);
    cr_assert_not_null(failures);
    return summary;
}

Test(devtests, the_synthesis_line_gives_the_counts)
{
    const char *out = "[----] Criterion v2.4.1\n"
                      "[====] Running 3 tests from greet:\n"
                      "[PASS] greet::hello: (0.01s)\n"
                      "[PASS] greet::bye: (0.01s)\n"
                      "[----] tests/greet_test.c:20: Assertion Failed\n"
                      "[----]   status 500, want 200\n"
                      "[FAIL] greet::teapot: (0.02s)\n"
                      "[====] Synthesis: Tested: 3 | Passing: 2 | Failing: 1 | Crashing: 0 \n";
    cr_assert_str_eq(summary_of(out), "2 passed, 1 failed of 3");
    cr_assert_str_eq(failures, "[----] Criterion v2.4.1\n"
                               "[----] tests/greet_test.c:20: Assertion Failed\n"
                               "[----]   status 500, want 200\n"
                               "[FAIL] greet::teapot: (0.02s)\n",
                     "the [----] and [FAIL] lines, no [PASS] or [====]:\n%s", failures);
}

Test(devtests, crashed_tests_count_as_failed_and_say_so)
{
    const char *out = "[----] tests/t.c:9: Unexpected signal caught below this line!\n"
                      "[FAIL] t::segv: CRASH!\n"
                      "[====] Synthesis: Tested: 4 | Passing: 1 | Failing: 1 | Crashing: 2 ";
    cr_assert_str_eq(summary_of(out), "1 passed, 3 failed (some crashed) of 4");
    cr_assert(strstr(failures, "[FAIL] t::segv: CRASH!\n") != NULL, "%s", failures);
    cr_assert_null(strstr(failures, "Synthesis"), "[====] lines are no failure lines");
}

Test(devtests, output_without_a_synthesis_did_not_run)
{
    const char *out = "cc -o build/tests/t tests/t.c\n"
                      "tests/t.c:3:1: error: expected ';' before '}' token\n"
                      "make: *** [Makefile:12: build/tests/t] Error 1";
    cr_assert_str_eq(summary_of(out), "did not run (see the output)");
    cr_assert_str_eq(failures, "tests/t.c:3:1: error: expected ';' before '}' token\n"
                               "make: *** [Makefile:12: build/tests/t] Error 1\n",
                     "compiler and make errors are failure lines:\n%s", failures);
    cr_assert_str_eq(summary_of(""), "did not run (see the output)");
    cr_assert_str_eq(failures, "");
}

Test(devtests, a_truncated_synthesis_still_counts_what_it_has)
{
    /* Criterion cut off mid-line (a killed run): the numbers read so far */
    cr_assert_str_eq(summary_of("[====] Synthesis: Tested: 5 | Passing: 5"), "5 passed, 0 failed of 5");
    cr_assert_str_eq(summary_of("Synthesis: Tested: x"), "did not run (see the output)",
                     "no count at all is no run");
}

Test(devtests, every_test_binarys_synthesis_is_added_up)
{
    /* make test running two Criterion binaries: the second's failure must show */
    cr_assert_str_eq(summary_of("[====] Synthesis: Tested: 3 | Passing: 3 | Failing: 0 | Crashing: 0 \n"
                                "[FAIL] b::c: (0.00s)\n"
                                "[====] Synthesis: Tested: 2 | Passing: 0 | Failing: 1 | Crashing: 1 \n"),
                     "3 passed, 2 failed (some crashed) of 5");
}

Test(devtests, a_small_summary_buffer_is_cut_not_overrun)
{
    char small[8];
    memset(small, 'X', sizeof(small));
    weft_dev_tests_summarize("Synthesis: Tested: 100 | Passing: 99 | Failing: 1 | Crashing: 0", small, 6,
                             &failures);
    cr_assert_str_eq(small, "99 pa");
    cr_assert_eq(small[6], 'X', "nothing written past the size given");
}

/* ---- a run on the test thread ---- */

static weft_dev_dirs dirs;

/* A project "probe" under the dev root whose `make test` prints `output`, then runs `last` (a shell command). */
static void project(const char *output, const char *last)
{
    snprintf(dirs.root, sizeof(dirs.root), "%s", wt_tmpdir);
    snprintf(dirs.build, sizeof(dirs.build), "%s/build", wt_tmpdir);
    cr_assert_eq(mkdir(dirs.build, 0755), 0);
    char path[600];
    snprintf(path, sizeof(path), "%s/probe", wt_tmpdir);
    cr_assert_eq(mkdir(path, 0755), 0);
    snprintf(path, sizeof(path), "%s/probe/tests", wt_tmpdir);
    cr_assert_eq(mkdir(path, 0755), 0);
    snprintf(path, sizeof(path), "%s/probe/probe.c", wt_tmpdir);
    wt_write_file_atomic(path, "/* not compiled here */\n");
    snprintf(path, sizeof(path), "%s/probe/out.txt", wt_tmpdir);
    wt_write_file_atomic(path, output);
    char mk[800];
    /* O is what weft passes: shown, so the test sees it */
    snprintf(mk, sizeof(mk), "test:\n\t@cat out.txt\n\t@echo \"O=$(O)\"\n\t@%s\n", last);
    snprintf(path, sizeof(path), "%s/probe/Makefile", wt_tmpdir);
    wt_write_file_atomic(path, mk);
    cr_assert_eq(weft_dev_scan(&dirs), 0);
    weft_dev_lock();
    cr_assert_eq(weft_dev_n_projects(), 1);
    cr_assert_str_eq(weft_dev_project_at(0)->name, "probe");
    weft_dev_unlock();
    cr_assert(weft_dev_has_tests(weft_dev_project_at(0)), "tests/ and a Makefile: tests to run");
}

/* Requests a run and waits for its verdict (bounded); the project, read under the lock. */
static weft_dev_project run_once(void)
{
    weft_dev_tests_start(&dirs);
    weft_dev_tests_request(0);
    uint64_t deadline = weft_now_ns() + 30000000000ull;
    weft_dev_project p;
    for (;;) {
        weft_dev_lock();
        p = *weft_dev_project_at(0);
        p.test_output = p.test_output ? strdup(p.test_output) : NULL;
        weft_dev_unlock();
        if (p.test_runs > 0)
            break;
        free(p.test_output);
        cr_assert_lt(weft_now_ns(), deadline, "no verdict in 30 s (state %d)", p.test_state);
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    weft_dev_tests_stop();
    return p;
}

Test(devtests, the_exit_status_decides_and_only_failure_lines_are_kept)
{
    project("[----] t.c:5: Assertion Failed\n[FAIL] probe::x: (0.00s)\n"
            "[====] Synthesis: Tested: 2 | Passing: 1 | Failing: 1 | Crashing: 0\n",
            "exit 1");
    weft_dev_project p = run_once();
    cr_assert_eq(p.test_state, WEFT_DEV_TESTS_FAILED);
    cr_assert_str_eq(p.test_summary, "1 passed, 1 failed of 2");
    char want[200];
    snprintf(want, sizeof(want), "[----] t.c:5: Assertion Failed\n[FAIL] probe::x: (0.00s)\n"
                                 "make: *** [Makefile:4: test] Error 1\n");
    cr_assert(p.test_output != NULL, "no failures kept");
    /* a line is a failure line for what it holds, not for a later line's "Error" */
    cr_assert_str_eq(p.test_output, want, "the failure lines, and make's; not the O= line");
    free(p.test_output);
}

Test(devtests, a_passing_summary_does_not_hide_a_failed_make)
{
    project("[====] Synthesis: Tested: 1 | Passing: 1 | Failing: 0 | Crashing: 0\n", "exit 3");
    weft_dev_project p = run_once();
    cr_assert_eq(p.test_state, WEFT_DEV_TESTS_FAILED, "make exited 3");
    cr_assert_str_eq(p.test_summary, "1 passed, 0 failed of 1");
    free(p.test_output);
}

Test(devtests, a_run_that_dies_without_a_failure_line_keeps_all_its_output)
{
    /* make itself killed (as by the OOM killer): not even make's own "Error" line */
    project("no tests were built\n", "kill -KILL $$PPID");
    weft_dev_project p = run_once();
    cr_assert_eq(p.test_state, WEFT_DEV_TESTS_FAILED);
    cr_assert_str_eq(p.test_summary, "did not run (see the output)");
    char want[PATH_MAX + 64];
    snprintf(want, sizeof(want), "no tests were built\nO=%s/test-probe\n", dirs.build);
    cr_assert(p.test_output != NULL && strcmp(p.test_output, want) == 0,
              "all of it, the build under the dev build directory:\n%s", p.test_output);
    free(p.test_output);
}

Test(devtests, a_passing_run_passes)
{
    project("[====] Synthesis: Tested: 1 | Passing: 1 | Failing: 0 | Crashing: 0\n", "true");
    weft_dev_project p = run_once();
    cr_assert_eq(p.test_state, WEFT_DEV_TESTS_PASSED);
    cr_assert_str_eq(p.test_summary, "1 passed, 0 failed of 1");
    cr_assert_str_eq(p.test_output, "", "no failure lines");
    cr_assert_eq(p.test_runs, 1);
    free(p.test_output);
}
