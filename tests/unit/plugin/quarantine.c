/*
 * Tests for server/plugin/quarantine.c: the crash records that quarantine a
 * plugin build at the next start. Where they go (state_dir, then
 * $STATE_DIRECTORY, then the pid file's directory), what a record written
 * by a dying process holds when another process reads it back, that only a
 * whole record for the very build on disk quarantines (a leftover .tmp, a
 * cut or corrupt file, another build's record do not, and the last is
 * removed), and `weft quarantine clear`'s matching by plugin name. Each test
 * runs in its own process (Criterion's), so the module's static state
 * directory starts empty in every one.
 */
#include "plugin/quarantine.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "unit.h"

#define SHA_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define SHA_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

static char state[512]; /* wt_tmpdir/state */

static void setup(void)
{
    unsetenv("STATE_DIRECTORY");
    wt_unit_setup("quarantine");
    snprintf(state, sizeof(state), "%s/state", wt_tmpdir);
}

TestSuite(quarantine, .init = setup, .fini = wt_unit_teardown, .timeout = 60);

static void use_state_dir(const char *dir)
{
    weft_config cfg = {0};
    cfg.state_dir = (char *)dir;
    cr_assert_str_eq(weft_quarantine_configure(&cfg), dir);
}

static weft_quarantine crash_of(const char *plugin, const char *sha)
{
    weft_quarantine q = {.since = 1767225600};
    snprintf(q.plugin, sizeof(q.plugin), "%s", plugin);
    snprintf(q.version, sizeof(q.version), "3.1.4");
    snprintf(q.sha256, sizeof(q.sha256), "%s", sha);
    snprintf(q.signal, sizeof(q.signal), "SIGSEGV");
    snprintf(q.route, sizeof(q.route), "/x");
    snprintf(q.dispatch, sizeof(q.dispatch), "pool");
    snprintf(q.request, sizeof(q.request), "GET /x?y=1");
    return q;
}

static void put_file(const char *name, const char *text)
{
    char path[700];
    snprintf(path, sizeof(path), "%s/%s", state, name);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s: %s", path, strerror(errno));
    fputs(text, f);
    cr_assert_eq(fclose(f), 0);
}

static int exists(const char *name)
{
    char path[700];
    snprintf(path, sizeof(path), "%s/%s", state, name);
    return access(path, F_OK) == 0;
}

static void expect_same(const weft_quarantine *got, const weft_quarantine *want)
{
    cr_assert_str_eq(got->plugin, want->plugin);
    cr_assert_str_eq(got->version, want->version);
    cr_assert_str_eq(got->sha256, want->sha256);
    cr_assert_str_eq(got->signal, want->signal);
    cr_assert_str_eq(got->route, want->route);
    cr_assert_str_eq(got->dispatch, want->dispatch);
    cr_assert_str_eq(got->request, want->request);
    cr_assert_eq(got->since, want->since);
}

/* ---- where records go ---- */

Test(quarantine, the_state_directory_is_chosen_in_order)
{
    weft_config cfg = {0};
    char out[256];
    weft_quarantine_dir_for(&cfg, out, sizeof(out));
    cr_assert_str_eq(out, "", "nothing configured: no records");

    cfg.pid_file = "/run/weft/weft.pid";
    weft_quarantine_dir_for(&cfg, out, sizeof(out));
    cr_assert_str_eq(out, "/run/weft");
    cfg.pid_file = "/weft.pid";
    weft_quarantine_dir_for(&cfg, out, sizeof(out));
    cr_assert_str_eq(out, "/");
    cfg.pid_file = "weft.pid";
    weft_quarantine_dir_for(&cfg, out, sizeof(out));
    cr_assert_str_eq(out, ".");

    setenv("STATE_DIRECTORY", "/var/lib/weft:/var/lib/other", 1);
    weft_quarantine_dir_for(&cfg, out, sizeof(out));
    cr_assert_str_eq(out, "/var/lib/weft", "systemd's first StateDirectory= wins over the pid file");
    setenv("STATE_DIRECTORY", "", 1);
    weft_quarantine_dir_for(&cfg, out, sizeof(out));
    cr_assert_str_eq(out, ".", "an empty $STATE_DIRECTORY is none");

    setenv("STATE_DIRECTORY", "/var/lib/weft", 1);
    cfg.state_dir = "/srv/state";
    weft_quarantine_dir_for(&cfg, out, sizeof(out));
    cr_assert_str_eq(out, "/srv/state", "state_dir wins over everything");
}

Test(quarantine, configure_creates_the_directory_and_dir_for_changes_nothing)
{
    use_state_dir(state);
    struct stat st;
    cr_assert_eq(stat(state, &st), 0, "%s: %s", state, strerror(errno));
    cr_assert(S_ISDIR(st.st_mode));
    cr_assert_eq(st.st_mode & 0027, 0, "records name builds and requests: mode %o", st.st_mode & 0777);

    /* dir_for (what `weft quarantine` uses) does not move the crash handler's directory */
    weft_config other = {0};
    other.state_dir = "/nonexistent/elsewhere";
    char out[256];
    weft_quarantine_dir_for(&other, out, sizeof(out));
    cr_assert_str_eq(out, "/nonexistent/elsewhere");
    weft_quarantine q = crash_of("crashy", SHA_A);
    char path[1400];
    cr_assert_eq(weft_crash_record_write(&q, path, sizeof(path)), 0);
    cr_assert_not_null(strstr(path, state), "%s", path);
}

Test(quarantine, nothing_is_written_without_a_directory_or_a_plugin)
{
    weft_quarantine q = crash_of("crashy", SHA_A);
    char path[1400] = "stale";
    cr_assert_eq(weft_crash_record_write(&q, path, sizeof(path)), -1, "no state directory configured");
    cr_assert_str_eq(path, "");
    weft_quarantine got;
    cr_assert_eq(weft_quarantine_check("crashy", SHA_A, &got), 0);

    use_state_dir(state);
    q.plugin[0] = '\0';
    cr_assert_eq(weft_crash_record_write(&q, path, sizeof(path)), -1, "a crash blamed on no plugin");
    cr_assert_str_eq(path, "");
    q = crash_of("crashy", SHA_A);
    cr_assert_eq(weft_crash_record_write(&q, path, 1), -1);

    /* a directory that cannot be made: configure warns, the write fails cleanly */
    char blocked[600];
    snprintf(blocked, sizeof(blocked), "%s/file", wt_tmpdir);
    FILE *f = fopen(blocked, "w");
    cr_assert_not_null(f);
    fclose(f);
    strcat(blocked, "/state");
    use_state_dir(blocked);
    strcpy(path, "stale");
    cr_assert_eq(weft_crash_record_write(&q, path, sizeof(path)), -1);
    cr_assert_str_eq(path, "");
}

/* ---- a record read back ---- */

Test(quarantine, a_record_round_trips_and_quarantines_its_build_only)
{
    use_state_dir(state);
    weft_quarantine q = crash_of("crashy", SHA_A);
    char path[1400], want[1400];
    cr_assert_eq(weft_crash_record_write(&q, path, sizeof(path)), 0);
    snprintf(want, sizeof(want), "%s/crash-crashy.rec", state);
    cr_assert_str_eq(path, want);
    cr_assert(!exists("crash-crashy.rec.tmp"), "the temporary file is renamed, not left");

    weft_quarantine got;
    memset(&got, 'x', sizeof(got));
    cr_assert_eq(weft_quarantine_check("crashy", SHA_A, &got), 1);
    expect_same(&got, &q);
    char text[600];
    weft_quarantine_describe(&got, text, sizeof(text));
    cr_assert_str_eq(text, "plugin crashy 3.1.4 crashed with SIGSEGV in route /x (dispatch=pool) on GET /x?y=1");
    cr_assert_eq(weft_quarantine_check("crashy", SHA_A, &got), 1, "checking does not use the record up");
    cr_assert_eq(weft_quarantine_check("other", SHA_A, &got), 0, "another plugin is not quarantined");
    cr_assert_eq(weft_quarantine_check("crashy", "", &got), 0, "a build without a hash is never matched");
}

/* The record is written by the process that dies and read by the next one. */
Test(quarantine, a_record_survives_the_process_that_wrote_it)
{
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        weft_config cfg = {0};
        cfg.state_dir = state;
        weft_quarantine_configure(&cfg);
        weft_quarantine q = crash_of("crashy", SHA_A);
        char path[1400];
        if (weft_crash_record_write(&q, path, sizeof(path)) != 0)
            _exit(1);
        raise(SIGKILL); /* no exit handlers, no flushing: as a crash ends */
        _exit(2);
    }
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "child: status %#x", st);

    weft_quarantine got;
    cr_assert_eq(weft_quarantine_check("crashy", SHA_A, &got), 0, "not configured yet: nothing is read");
    use_state_dir(state);
    cr_assert_eq(weft_quarantine_check("crashy", SHA_A, &got), 1, "the next start does not see the crash");
    cr_assert_str_eq(got.request, "GET /x?y=1");
    cr_assert_eq(got.since, 1767225600);
}

Test(quarantine, another_build_lifts_the_quarantine_and_removes_the_record)
{
    use_state_dir(state);
    weft_quarantine q = crash_of("crashy", SHA_A);
    char path[1400];
    cr_assert_eq(weft_crash_record_write(&q, path, sizeof(path)), 0);
    put_file("crash-crashy.log", "the backtrace ops/crash.c keeps next to the record\n");
    weft_quarantine got;
    cr_assert_eq(weft_quarantine_check("crashy", SHA_B, &got), 0);
    cr_assert_eq(got.plugin[0], '\0', "nothing is reported for another build");
    cr_assert(!exists("crash-crashy.rec"), "an obsolete record stays");
    cr_assert(!exists("crash-crashy.log"), "an obsolete record's log stays");
    cr_assert_eq(weft_quarantine_check("crashy", SHA_A, &got), 0, "the old build was quarantined by nothing");
}

Test(quarantine, a_later_crash_replaces_the_record)
{
    use_state_dir(state);
    weft_quarantine q = crash_of("crashy", SHA_A);
    char path[1400];
    cr_assert_eq(weft_crash_record_write(&q, path, sizeof(path)), 0);
    q = crash_of("crashy", SHA_B);
    snprintf(q.signal, sizeof(q.signal), "SIGBUS");
    cr_assert_eq(weft_crash_record_write(&q, path, sizeof(path)), 0);
    weft_quarantine got;
    cr_assert_eq(weft_quarantine_check("crashy", SHA_B, &got), 1);
    cr_assert_str_eq(got.signal, "SIGBUS");
}

/* Control characters in a field would start a line of their own in the
 * file (a request path "/x\nsha256 <other build>" would move the record to
 * another build): the writer replaces them. */
Test(quarantine, a_field_cannot_forge_another_line)
{
    use_state_dir(state);
    weft_quarantine q = crash_of("crashy", SHA_A);
    snprintf(q.request, sizeof(q.request), "GET /x\nsha256 %s\r", SHA_B);
    char path[1400];
    cr_assert_eq(weft_crash_record_write(&q, path, sizeof(path)), 0);
    weft_quarantine got;
    cr_assert_eq(weft_quarantine_check("crashy", SHA_A, &got), 1, "the forged sha256 line was taken");
    cr_assert_str_eq(got.request, "GET /x?sha256 " SHA_B "?");
}

/* ---- half-written and corrupt files ---- */

Test(quarantine, only_a_whole_record_quarantines)
{
    use_state_dir(state);
    static const struct {
        const char *what, *text;
    } cases[] = {
        {"empty", ""},
        {"cut before the hash", "plugin crashy\nversion 3.1.4\n"},
        {"no plugin line", "version 3.1.4\nsha256 " SHA_A "\n"},
        {"binary junk", "\x7f" "ELF\x02\x01\x01\0\0\0\0\0\0\0\0\0"},
        {"keys without values", "plugin\nsha256\n"},
    };
    weft_quarantine got;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        put_file("crash-crashy.rec", cases[i].text);
        cr_assert_eq(weft_quarantine_check("crashy", SHA_A, &got), 0, "%s: quarantined", cases[i].what);
        cr_assert(exists("crash-crashy.rec"), "%s: an unreadable record is not another build's", cases[i].what);
    }

    /* cut after the hash: quarantines, the missing fields read as empty */
    put_file("crash-crashy.rec", "plugin crashy\nversion 3.1.4\nsha256 " SHA_A "\nsig");
    cr_assert_eq(weft_quarantine_check("crashy", SHA_A, &got), 1);
    cr_assert_str_eq(got.version, "3.1.4");
    cr_assert_str_eq(got.signal, "");
    cr_assert_eq(got.since, 0);

    /* What a crash mid-write leaves: only the temporary file, even a whole one. */
    cr_assert_eq(weft_quarantine_clear(state, NULL, NULL), 1);
    weft_quarantine q = crash_of("crashy", SHA_A);
    char path[1400];
    cr_assert_eq(weft_crash_record_write(&q, path, sizeof(path)), 0);
    char tmp[1500];
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    cr_assert_eq(rename(path, tmp), 0);
    cr_assert_eq(weft_quarantine_check("crashy", SHA_A, &got), 0, "a .tmp file quarantined");
    cr_assert_eq(weft_quarantine_clear(state, NULL, NULL), 0, "clear took the .tmp file for a record");
    cr_assert(exists("crash-crashy.rec.tmp"));
}

/* ---- clearing ---- */

static char said_names[512];

static void said(const weft_quarantine *q)
{
    snprintf(said_names + strlen(said_names), sizeof(said_names) - strlen(said_names), "%s ", q->plugin);
}

static void write_crash(const char *plugin)
{
    weft_quarantine q = crash_of(plugin, SHA_A);
    char path[1400];
    cr_assert_eq(weft_crash_record_write(&q, path, sizeof(path)), 0, "%s", plugin);
}

Test(quarantine, clear_by_name_matches_the_whole_name)
{
    use_state_dir(state);
    write_crash("a");
    write_crash("ab");
    write_crash("b");
    put_file("crash-a.log", "log\n");
    put_file("crash-.rec", "plugin x\nsha256 " SHA_A "\n");
    put_file("notes.rec", "plugin x\nsha256 " SHA_A "\n");
    put_file("crash-b.rec.tmp", "");

    said_names[0] = '\0';
    cr_assert_eq(weft_quarantine_clear(state, "a", said), 1);
    cr_assert_str_eq(said_names, "a ");
    cr_assert(!exists("crash-a.rec") && !exists("crash-a.log"));
    cr_assert(exists("crash-ab.rec"), "clearing 'a' removed 'ab'");
    cr_assert_eq(weft_quarantine_clear(state, "a", said), 0, "cleared twice");
    cr_assert_eq(weft_quarantine_clear(state, "abc", said), 0);
    cr_assert_eq(weft_quarantine_clear(state, "", said), 0);

    said_names[0] = '\0';
    cr_assert_eq(weft_quarantine_clear(state, NULL, said), 2);
    cr_assert(strstr(said_names, "ab ") != NULL && strstr(said_names, "b ") != NULL, "%s", said_names);
    cr_assert(!exists("crash-ab.rec") && !exists("crash-b.rec"));
    cr_assert(exists("crash-.rec") && exists("notes.rec") && exists("crash-b.rec.tmp"),
              "clear removed a file that is no record");
    weft_quarantine got;
    cr_assert_eq(weft_quarantine_check("b", SHA_A, &got), 0, "a cleared plugin is still quarantined");
}

Test(quarantine, clear_removes_an_unreadable_record_without_reporting_it)
{
    use_state_dir(state);
    put_file("crash-cut.rec", "plugin cut\n");
    said_names[0] = '\0';
    cr_assert_eq(weft_quarantine_clear(state, "cut", said), 1);
    cr_assert_str_eq(said_names, "", "an unreadable record was described");
    cr_assert(!exists("crash-cut.rec"));
}

Test(quarantine, clear_of_a_missing_or_unreadable_directory)
{
    char gone[600];
    snprintf(gone, sizeof(gone), "%s/never-made", wt_tmpdir);
    cr_assert_eq(weft_quarantine_clear(gone, NULL, NULL), 0, "no state directory yet: nothing to clear");
    char file[600];
    snprintf(file, sizeof(file), "%s/plain", wt_tmpdir);
    FILE *f = fopen(file, "w");
    cr_assert_not_null(f);
    fclose(f);
    cr_assert_eq(weft_quarantine_clear(file, NULL, NULL), -1, "a file as the state directory is an error");
}
