/* weft's command line: serve, test a config (-t), version, help. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dispatch/blocking.h"
#include "config/config.h"
#include "base/file.h"
#include "config/config_diff.h"
#include "process/control.h"
#include "process/handover.h"
#include "process/outcome.h"
#include "dev/dev.h"
#include "dev/scaffold.h"
#include "reload/dropins.h"
#include "reload/generation.h"
#include "reload/probe.h"
#include "base/file.h"
#include "base/log.h"
#include "plugin/module.h"
#include "plugin/quarantine.h"
#include "ops/crash.h"
#include "process/server.h"
#include "base/signals.h"
#include "version.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: weft [-c FILE] [-t]\n"
            "       weft reload [-c FILE]\n"
            "       weft upgrade [-c FILE]\n"
            "       weft quarantine clear [NAME] [-c FILE]\n"
            "       weft new-plugin NAME [DIR]\n"
            "       weft dev [DIR]\n"
            "       weft --version | --help\n"
            "\n"
            "  -c, --config FILE  configuration file (default: %s)\n"
            "  -t, --test         validate the configuration completely (parse it, load every plugin,\n"
            "                     initialise every route) without serving, then exit 0 if it is valid\n"
            "                     or 1 with the reasons\n"
            "  -V, --version      print the version and the plugin ABI, then exit\n"
            "  -h, --help         print this help, then exit\n"
            "  reload             ask the running weft (found through the config's pid_file) to reload\n"
            "                     its configuration and wait for its verdict: exit 1 with its reasons\n"
            "                     if it refused (WEFT_RELOAD_WAIT_S, default 60)\n"
            "  upgrade            ask the running weft to start the weft binary now on disk, hand it\n"
            "                     its listening sockets and drain once that one serves (SIGUSR2);\n"
            "                     exit 1 with the reason if it refused, 3 if no weft runs or it is\n"
            "                     too old for that (restart it instead)\n"
            "  quarantine clear   remove the crash records (of plugin NAME, or all) that quarantine a\n"
            "                     plugin build which crashed the server, then ask it to reload\n"
            "  new-plugin NAME    write a ready-to-build plugin project DIR/NAME (default DIR: .)\n"
            "  dev [DIR]          build every plugin project under DIR (default .), serve them on\n"
            "                     127.0.0.1:8080, rebuild on save; Dev UI at http://127.0.0.1:9901/dev\n"
            "\n"
            "environment:\n"
            "  PORT               replaces the port of the first listen address\n"
            "  WEFT_PLUGIN_PATH   colon-separated plugin directories searched before plugin_dirs\n",
            WEFT_DEFAULT_CONFIG);
}

static int log_as_configured(const weft_config *cfg, weft_errors *errs, void *ctx)
{
    (void)errs;
    (void)ctx;
    /* Before the build: the probe's and the plugins' load lines are in the
     * configured format and level too. */
    weft_log_set_json(cfg->log.json);
    weft_log_set_level(cfg->log.level);
    return 0;
}

/* Loads the config and builds its generation; prints every problem found.
 * A drop-in file that does not load is left out (reload/dropins.h): a
 * warning for -t, an error in the server's log, never a failed start. */
static weft_generation *load(const char *path, int check_only)
{
    weft_errors errs = {0};
    weft_generation *gen =
        weft_dropins_build(path, NULL, NULL, 1, check_only, check_only ? NULL : log_as_configured, NULL, &errs);
    for (size_t i = 0; i < errs.count; i++)
        weft_say(WEFT_LOG_ERROR, "%s", errs.msgs[i]);
    weft_errors_clear(&errs);
    for (size_t i = 0; gen != NULL && i < gen->cfg->n_refused; i++) {
        const weft_refusal *r = &gen->cfg->refused[i];
        if (check_only)
            weft_say(WEFT_LOG_WARN, "warning: drop-in %s is left out (its routes would not be served): %s", r->file,
                    r->reason);
        else
            weft_log_error("drop-in %s refused, its routes are not served: %s", r->file, r->reason);
    }
    return gen;
}

/* The server would refuse a change of restart-only settings after the
 * signal; say so first, in its words (config/config_diff.c). */
static int restart_only_refused(const weft_config *cfg)
{
    char path[4200], msg[1024];
    weft_control_serving_path(cfg->pid_file, path, sizeof(path));
    char *text = weft_file_read(path, NULL);
    if (text == NULL) /* not ours to read (another user) or an older server: it checks anyway */
        return 0;
    weft_errors errs = {0};
    weft_dropin_policy any = {.any = 1};
    weft_config *serving = weft_config_load_dropins(cfg->path, text, &any, &errs);
    weft_errors_clear(&errs);
    free(text);
    int refused = serving != NULL && weft_config_restart_only(serving, cfg, msg, sizeof(msg));
    if (refused) {
        weft_say(WEFT_LOG_ERROR, "%s", msg);
        weft_say(WEFT_LOG_ERROR, "not signalling: the running server would refuse this reload");
    }
    weft_config_free(serving);
    return refused;
}

/* For the subcommands that only need the config's settings: NULL after
 * saying why (and what that means: `consequence`). */
static weft_config *config_for(const char *config, const char *consequence)
{
    weft_errors errs = {0};
    /* A broken drop-in does not stop `weft reload` either: the server leaves it out. */
    weft_dropin_policy any = {.any = 1};
    weft_config *cfg = weft_config_load_dropins(config, NULL, &any, &errs);
    if (cfg == NULL) {
        for (size_t i = 0; i < errs.count; i++)
            weft_say(WEFT_LOG_ERROR, "%s", errs.msgs[i]);
        weft_errors_clear(&errs);
        weft_say(WEFT_LOG_ERROR, "%s: %s is invalid", consequence, config);
    }
    return cfg;
}

/* The server's own verdict on the reload just asked for (process/outcome.h):
 * its reasons on stderr and exit 1 when it refused, so ExecReload fails
 * with them. An older server that reports nothing is taken at its word. */
static int await_outcome(const char *pid_file, int pid, unsigned long attempts_before)
{
    const char *w = getenv("WEFT_RELOAD_WAIT_S");
    long wait_s = w != NULL && atol(w) > 0 ? atol(w) : 60;
    struct timespec poll = {0, 50 * 1000 * 1000};
    weft_outcome now;
    for (long i = 0; i < wait_s * 20; i++, nanosleep(&poll, NULL)) {
        if (weft_outcome_read(pid_file, &now) != 0 || now.attempts <= attempts_before)
            continue;
        if (now.ok) {
            weft_say(WEFT_LOG_INFO, "pid %d: %s", pid, now.message);
            return 0;
        }
        for (char *save, *line = strtok_r(now.message, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save))
            weft_say(WEFT_LOG_ERROR, "%s", line);
        weft_say(WEFT_LOG_ERROR, "reload refused: pid %d keeps serving the configuration it had", pid);
        return 1;
    }
    if (kill(pid, 0) != 0) {
        weft_say(WEFT_LOG_ERROR, "pid %d is gone: it did not report the reload", pid);
        return 1;
    }
    weft_say(WEFT_LOG_WARN, "pid %d reported no outcome within %ld s (WEFT_RELOAD_WAIT_S); see its log", pid,
             wait_s);
    return attempts_before > 0 ? 1 : 0;
}

/* `weft reload`: what `systemctl reload` and operators without systemd use. */
static int signal_running(const char *config)
{
    weft_config *cfg = config_for(config, "not signalling (a reload would be refused anyway)");
    if (cfg == NULL)
        return 1;
    int rc = 1;
    if (cfg->pid_file == NULL) {
        weft_say(WEFT_LOG_ERROR, "%s sets no pid_file, so the running server cannot be found; send it SIGHUP",
                config);
    } else {
        FILE *f = fopen(cfg->pid_file, "r");
        int pid = 0;
        if (f == NULL || fscanf(f, "%d", &pid) != 1 || pid <= 0)
            weft_say(WEFT_LOG_ERROR, "cannot read a pid from %s: %s", cfg->pid_file,
                    f == NULL ? strerror(errno) : "no number in it");
        else if (restart_only_refused(cfg))
            ;
        else {
            weft_outcome before;
            int reported = weft_outcome_read(cfg->pid_file, &before) == 0;
            if (kill(pid, SIGHUP) != 0)
                weft_say(WEFT_LOG_ERROR, "cannot signal pid %d (from %s): %s", pid, cfg->pid_file, strerror(errno));
            else {
                weft_say(WEFT_LOG_INFO, "asked pid %d to reload %s", pid, config);
                rc = await_outcome(cfg->pid_file, pid, reported ? before.attempts : 0);
            }
        }
        if (f != NULL)
            fclose(f);
    }
    weft_config_free(cfg);
    return rc;
}

/* `weft upgrade`: what the package's postinst runs instead of a restart. */
static int upgrade_running(const char *config)
{
    weft_config *cfg = config_for(config, "not signalling");
    if (cfg == NULL)
        return 1;
    int rc = 1;
    if (cfg->pid_file == NULL)
        weft_say(WEFT_LOG_ERROR, "%s sets no pid_file, so the running server cannot be found; send it SIGUSR2",
                 config);
    else
        rc = weft_handover_request(cfg->pid_file);
    weft_config_free(cfg);
    return rc;
}

static void said_cleared(const weft_quarantine *q)
{
    char why[1200];
    weft_quarantine_describe(q, why, sizeof(why));
    weft_say(WEFT_LOG_INFO, "quarantine of plugin %s lifted (%s)", q->plugin, why);
}

/* `weft quarantine clear [NAME]`: the records go, then a reload (if weft
 * runs) builds a generation in which those routes serve again. */
static int quarantine_clear(const char *config, const char *name)
{
    weft_config *cfg = config_for(config, "cannot find the state directory");
    if (cfg == NULL)
        return 1;
    char dir[1024];
    weft_quarantine_dir_for(cfg, dir, sizeof(dir));
    int has_pid = cfg->pid_file != NULL;
    weft_config_free(cfg);
    if (dir[0] == '\0') {
        weft_say(WEFT_LOG_INFO, "%s sets neither state_dir nor pid_file (and STATE_DIRECTORY is unset): no crash "
                        "records are kept, nothing is quarantined", config);
        return 0;
    }
    int n = weft_quarantine_clear(dir, name, said_cleared);
    if (n < 0) {
        weft_say(WEFT_LOG_ERROR, "cannot read the state directory %s: %s", dir, strerror(errno));
        return 1;
    }
    if (n == 0) {
        weft_say(WEFT_LOG_INFO, "no crash record%s%s in %s: nothing is quarantined", name ? " of plugin " : "",
                name ? name : "", dir);
        return 0;
    }
    /* A server not running (or without a pid file) lifts it at its next start. */
    if (has_pid && signal_running(config) != 0)
        weft_say(WEFT_LOG_WARN, "the records are gone; a running weft lifts the quarantine at its next reload");
    return 0;
}

/*
 * Serves `config` until SIGTERM/SIGINT: the plain command's server, and the
 * one `weft dev` is handed (dev/ sits below process/); `loaded`, if not
 * NULL, sees the generation before it serves.
 */
static int serve(const char *config, void (*loaded)(const weft_generation *gen))
{
    weft_generation *gen = load(config, 0);
    if (gen == NULL) {
        weft_module_cleanup();
        weft_say(WEFT_LOG_ERROR, "not starting: configuration file %s is invalid", config);
        return 1;
    }
    if (loaded != NULL)
        loaded(gen);
    weft_log_set_json(gen->cfg->log.json);
    char why[600];
    if (gen->cfg->log.error_log != NULL && weft_log_open_error_log(gen->cfg->log.error_log, why, sizeof(why)) != 0) {
        weft_say(WEFT_LOG_ERROR, "not starting: %s: log.error_log: %s", config, why);
        weft_generation_release(gen);
        weft_module_cleanup();
        return 1;
    }
    weft_blocking_configure(gen->cfg->blocking.threshold_ms, gen->cfg->blocking.interval_s);
    return weft_server_run(gen);
}

/* weft -t: the configuration checked as a start would build it, and what it holds said. */
static int test_config(const char *config)
{
    weft_generation *gen = load(config, 1);
    if (gen == NULL) {
        weft_module_cleanup();
        weft_say(WEFT_LOG_ERROR, "configuration file %s test failed", config);
        return 1;
    }
    char statics[64] = "";
    if (gen->cfg->n_statics > 0)
        snprintf(statics, sizeof(statics), ", %zu static route(s)", gen->cfg->n_statics);
    if (gen->cfg->n_refused > 0)
        weft_say(WEFT_LOG_INFO, "configuration file %s is valid (%zu routes, %zu plugins%s; %zu drop-in file(s) left "
                        "out, see the warnings)", config, gen->n_routes, gen->n_modules, statics, gen->cfg->n_refused);
    else
        weft_say(WEFT_LOG_INFO, "configuration file %s is valid (%zu routes, %zu plugins%s)", config, gen->n_routes,
                gen->n_modules, statics);
    weft_generation_release(gen);
    weft_module_cleanup(); /* the empty private copy directory */
    return 0;
}

int main(int argc, char **argv)
{
    /* Before any thread exists (worker pools start while the config is
     * loaded): every thread inherits the mask, so SIGTERM can only reach the
     * control thread's signalfd, never a thread that has not blocked it yet. */
    weft_signals_block_async();
    weft_crash_report_install();
    if (argc >= 2 && strcmp(argv[1], WEFT_PROBE_ARG) == 0)
        return weft_probe_child_main(argc, argv);
    weft_probe_enable();
    if (argc >= 2 && strcmp(argv[1], "new-plugin") == 0) {
        if (argc < 3 || argc > 4) {
            fprintf(stderr, "usage: weft new-plugin NAME [DIR]\n");
            return 2;
        }
        return weft_scaffold(argv[2], argc == 4 ? argv[3] : ".");
    }
    if (argc >= 2 && strcmp(argv[1], "dev") == 0)
        return weft_dev_main(argc, argv, serve);
    /* The arguments as given: a hand-over starts the next binary with them. */
    weft_handover_init(argc, argv);
    int reload = argc > 1 && strcmp(argv[1], "reload") == 0;
    int upgrade = argc > 1 && strcmp(argv[1], "upgrade") == 0;
    const char *clear = NULL; /* "quarantine clear [NAME]": NAME, or "" for all */
    if (argc > 2 && strcmp(argv[1], "quarantine") == 0 && strcmp(argv[2], "clear") == 0) {
        clear = argc > 3 && argv[3][0] != '-' ? argv[3] : "";
        int skip = 2 + (clear[0] != '\0');
        argv[skip] = argv[0];
        argv += skip;
        argc -= skip;
    } else if (argc > 1 && strcmp(argv[1], "quarantine") == 0) {
        fprintf(stderr, "usage: weft quarantine clear [NAME] [-c FILE]\n");
        return 2;
    }
    if (reload || upgrade) {
        argv[1] = argv[0];
        argv++;
        argc--;
    }
    static const struct option longopts[] = {{"config", required_argument, NULL, 'c'},
                                              {"test", no_argument, NULL, 't'},
                                              {"version", no_argument, NULL, 'V'},
                                              {"help", no_argument, NULL, 'h'},
                                              {NULL, 0, NULL, 0}};
    const char *config = WEFT_DEFAULT_CONFIG;
    int test = 0, c;
    while ((c = getopt_long(argc, argv, "c:tVh", longopts, NULL)) != -1) {
        switch (c) {
        case 'c': config = optarg; break;
        case 't': test = 1; break;
        case 'V': printf("weft %s (plugin ABI %u)\n", WEFT_VERSION, WEFT_PLUGIN_ABI); return 0;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        weft_say(WEFT_LOG_ERROR, "unexpected argument '%s'", argv[optind]);
        usage(stderr);
        return 2;
    }
    if (reload)
        return signal_running(config);
    if (upgrade)
        return upgrade_running(config);
    if (clear != NULL)
        return quarantine_clear(config, clear[0] != '\0' ? clear : NULL);
    if (test)
        return test_config(config);
    return serve(config, NULL);
}
