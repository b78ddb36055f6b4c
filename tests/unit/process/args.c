/*
 * Tests for weft's command line (server/process/main.c): the parsing is
 * main()'s own, so these run the built binary (WEFT_BIN) with bad arguments
 * and check the exit status and what goes to stdout and to stderr apart —
 * 2 with the usage on stderr for a malformed command line, 1 with the
 * reason for one that names nothing to act on, 3 for `weft upgrade` with no
 * weft to hand over from. Nothing here starts a server.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "spawn.h"
#include "unit.h"

static void setup(void) { wt_unit_setup("args"); }
TestSuite(args, .init = setup, .fini = wt_unit_teardown, .timeout = 60);

typedef struct run {
    int status; /* the exit status, or 128 + the signal */
    char *out, *err;
} run;

static run last;

static char *slurp(const char *path)
{
    char *s = wt_read_file(path);
    cr_assert_not_null(s, "cannot read %s", path);
    return s;
}

/* `weft ARGS...` (NULL-terminated) to its end, stdout and stderr into files of their own. */
static run *weft(const char *const *args)
{
    free(last.out);
    free(last.err);
    last.out = last.err = NULL;
    char outp[300], errp[300];
    snprintf(outp, sizeof(outp), "%s/stdout", wt_tmpdir);
    snprintf(errp, sizeof(errp), "%s/stderr", wt_tmpdir);
    const char *argv[16] = {"weft"};
    size_t n = 1;
    for (; args[n - 1] != NULL && n < 15; n++)
        argv[n] = args[n - 1];
    argv[n] = NULL;
    /* journald's stream would prefix each line with its priority */
    static const char *const drop[] = {"JOURNAL_STREAM=", NULL};
    char **env = wt_env(drop, NULL);
    int timed_out = 0;
    last.status = wt_wait(wt_spawn(WEFT_BIN, argv, env, outp, errp, WT_SPAWN_TRUNCATE), 30000, 0, &timed_out);
    free(env);
    cr_assert_not(timed_out, "weft %s did not exit within 30 s", args[0]);
    last.out = slurp(outp);
    last.err = slurp(errp);
    return &last;
}

#define WEFT(...) weft((const char *const[]){__VA_ARGS__, NULL})

/* A malformed command line: exit 2, `says` and the whole usage on stderr, nothing on stdout. */
static void refused_with_usage(const run *r, const char *says)
{
    cr_assert_eq(r->status, 2, "exit %d, want 2; stderr:\n%s", r->status, r->err);
    cr_assert(strstr(r->err, says) != NULL, "stderr does not say '%s':\n%s", says, r->err);
    cr_assert(strstr(r->err, "usage: weft [-c FILE] [-t]\n") != NULL, "no usage on stderr:\n%s", r->err);
    cr_assert_str_eq(r->out, "", "stdout is for what was asked for");
}

static void teardown_run(void)
{
    free(last.out);
    free(last.err);
    last = (run){0};
}

Test(args, help_and_version_go_to_stdout_and_exit_0, .fini = teardown_run)
{
    static const char *const help[] = {"--help", "-h"};
    for (size_t i = 0; i < 2; i++) {
        run *r = WEFT(help[i]);
        cr_assert_eq(r->status, 0, "%s: exit %d", help[i], r->status);
        cr_assert(strncmp(r->out, "usage: weft [-c FILE] [-t]\n", 27) == 0, "%s:\n%s", help[i], r->out);
        cr_assert(strstr(r->out, "weft upgrade [-c FILE]") != NULL && strstr(r->out, "WEFT_PLUGIN_PATH") != NULL);
        cr_assert_str_eq(r->err, "", "%s wrote to stderr: %s", help[i], r->err);
    }
    static const char *const version[] = {"--version", "-V"};
    for (size_t i = 0; i < 2; i++) {
        run *r = WEFT(version[i]);
        cr_assert_eq(r->status, 0);
        cr_assert(strncmp(r->out, "weft ", 5) == 0 && strstr(r->out, " (plugin ABI ") != NULL &&
                      strchr(r->out, '\n') == r->out + strlen(r->out) - 1,
                  "one line: %s", r->out);
        cr_assert_str_eq(r->err, "");
    }
    /* the first one of several wins: help before a bad option is help */
    run *r = WEFT("-h", "--bogus");
    cr_assert_eq(r->status, 0, "%s", r->err);
}

Test(args, an_unknown_option_is_refused_with_the_usage, .fini = teardown_run)
{
    refused_with_usage(WEFT("--bogus"), "unrecognized option '--bogus'");
    refused_with_usage(WEFT("-x"), "invalid option -- 'x'");
    /* after the subcommand's word, the same options are parsed */
    refused_with_usage(WEFT("reload", "--bogus"), "unrecognized option '--bogus'");
    refused_with_usage(WEFT("upgrade", "-q"), "invalid option -- 'q'");
    refused_with_usage(WEFT("quarantine", "clear", "--bogus"), "unrecognized option '--bogus'");
}

Test(args, an_option_without_its_value_is_refused, .fini = teardown_run)
{
    refused_with_usage(WEFT("-c"), "option requires an argument -- 'c'");
    refused_with_usage(WEFT("--config"), "option '--config' requires an argument");
    refused_with_usage(WEFT("-t", "--config"), "option '--config' requires an argument");
    refused_with_usage(WEFT("reload", "-c"), "option requires an argument -- 'c'");
}

Test(args, a_stray_argument_is_named, .fini = teardown_run)
{
    refused_with_usage(WEFT("serve"), "weft: unexpected argument 'serve'\n");
    refused_with_usage(WEFT("-t", "-c", "/x.conf", "extra"), "unexpected argument 'extra'");
    refused_with_usage(WEFT("reload", "now"), "unexpected argument 'now'");
    /* quarantine clear takes one NAME: a second is a stray */
    refused_with_usage(WEFT("quarantine", "clear", "a", "b"), "unexpected argument 'b'");
}

Test(args, each_subcommand_refuses_a_malformed_use_with_its_own_usage, .fini = teardown_run)
{
    static const struct {
        const char *args[5];
        const char *usage;
    } cases[] = {
        {{"quarantine"}, "usage: weft quarantine clear [NAME] [-c FILE]\n"},
        {{"quarantine", "list"}, "usage: weft quarantine clear [NAME] [-c FILE]\n"},
        {{"new-plugin", "a", "dir", "extra"}, "usage: weft new-plugin NAME [DIR]\n"},
        {{"dev", "a", "b"}, "usage: weft dev [DIR]\n"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        run *r = weft(cases[i].args);
        cr_assert_eq(r->status, 2, "%s: exit %d:\n%s", cases[i].args[0], r->status, r->err);
        cr_assert_str_eq(r->err, cases[i].usage, "%s %s", cases[i].args[0], cases[i].args[1]);
        cr_assert_str_eq(r->out, "");
    }
}

static char conf[300];

/* A config the subcommands can read: `extra` adds settings (a pid_file). */
static void write_conf(const char *extra)
{
    snprintf(conf, sizeof(conf), "%s/weft.conf", wt_tmpdir);
    FILE *f = fopen(conf, "w");
    cr_assert_not_null(f);
    fprintf(f, "listen = [ \"127.0.0.1:1\" ];\n%s\n"
               "routes = ( { path = \"/x\"; plugin = \"hello\"; dispatch = \"reactive\"; } );\n", extra);
    cr_assert_eq(fclose(f), 0);
}

Test(args, reload_and_upgrade_refuse_a_config_that_does_not_load, .fini = teardown_run)
{
    run *r = WEFT("reload", "-c", "/nonexistent/weft.conf");
    cr_assert_eq(r->status, 1, "%s", r->err);
    cr_assert(strstr(r->err, "not signalling (a reload would be refused anyway): /nonexistent/weft.conf is invalid"),
              "%s", r->err);
    r = WEFT("upgrade", "-c", "/nonexistent/weft.conf");
    cr_assert_eq(r->status, 1, "%s", r->err);
    cr_assert(strstr(r->err, "not signalling: /nonexistent/weft.conf is invalid") != NULL, "%s", r->err);
    r = WEFT("quarantine", "clear", "-c", "/nonexistent/weft.conf");
    cr_assert_eq(r->status, 1, "%s", r->err);
    cr_assert(strstr(r->err, "cannot find the state directory: /nonexistent/weft.conf is invalid") != NULL, "%s",
              r->err);
}

Test(args, upgrade_without_a_pid_file_setting_says_how_else, .fini = teardown_run)
{
    write_conf("");
    run *r = WEFT("upgrade", "-c", conf);
    cr_assert_eq(r->status, 1, "%s", r->err);
    cr_assert(strstr(r->err, "sets no pid_file, so the running server cannot be found; send it SIGUSR2") != NULL,
              "%s", r->err);
}

Test(args, reload_and_upgrade_need_a_pid_in_the_pid_file, .fini = teardown_run)
{
    char pid_file[300], setting[400];
    snprintf(pid_file, sizeof(pid_file), "%s/weft.pid", wt_tmpdir);
    snprintf(setting, sizeof(setting), "pid_file = \"%s\";", pid_file);
    write_conf(setting);
    run *r = WEFT("reload", "-c", conf);
    cr_assert_eq(r->status, 1, "%s", r->err);
    cr_assert(strstr(r->err, "cannot read a pid from") != NULL && strstr(r->err, "No such file or directory"),
              "%s", r->err);
    r = WEFT("upgrade", "-c", conf);
    cr_assert_eq(r->status, 3, "no weft to hand over from: exit 3, got %d:\n%s", r->status, r->err);
    cr_assert(strstr(r->err, "no running weft to hand over from; restart it instead") != NULL, "%s", r->err);

    wt_write_file_atomic(pid_file, "not a pid\n");
    r = WEFT("reload", "-c", conf);
    cr_assert_eq(r->status, 1, "%s", r->err);
    cr_assert(strstr(r->err, ": no number in it") != NULL, "%s", r->err);
    r = WEFT("upgrade", "-c", conf);
    cr_assert_eq(r->status, 3, "%s", r->err);
    cr_assert(strstr(r->err, "(no number in it)") != NULL, "%s", r->err);
}
