/* weft's command line: serve, test a config (-t), version, help. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blocking.h"
#include "config.h"
#include "generation.h"
#include "log.h"
#include "server.h"
#include "signals.h"
#include "version.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: weft [-c FILE] [-t]\n"
            "       weft reload [-c FILE]\n"
            "       weft --version | --help\n"
            "\n"
            "  -c, --config FILE  configuration file (default: %s)\n"
            "  -t, --test         validate the configuration completely (parse it, load every plugin,\n"
            "                     initialise every route) without serving, then exit 0 if it is valid\n"
            "                     or 1 with the reasons\n"
            "  -V, --version      print the version and the plugin ABI, then exit\n"
            "  -h, --help         print this help, then exit\n"
            "  reload             ask the running weft (found through the config's pid_file) to reload\n"
            "                     its configuration; the outcome is in its log and admin /status\n"
            "\n"
            "environment:\n"
            "  PORT               replaces the port of the first listen address\n"
            "  WEFT_PLUGIN_PATH   colon-separated plugin directories searched before plugin_dirs\n",
            WEFT_DEFAULT_CONFIG);
}

/* Loads the config and builds its generation; prints every problem found. */
static weft_generation *load(const char *path, int check_only)
{
    weft_errors errs = {0};
    weft_config *cfg = weft_config_load(path, &errs);
    weft_generation *gen = NULL;
    if (cfg != NULL) {
        gen = weft_generation_build(cfg, 1, check_only, &errs);
        if (gen == NULL)
            weft_config_free(cfg);
    }
    for (size_t i = 0; i < errs.count; i++)
        fprintf(stderr, "weft: %s\n", errs.msgs[i]);
    weft_errors_clear(&errs);
    return gen;
}

/* `weft reload`: what `systemctl reload` and operators without systemd use. */
static int signal_running(const char *config)
{
    weft_errors errs = {0};
    weft_config *cfg = weft_config_load(config, &errs);
    if (cfg == NULL) {
        for (size_t i = 0; i < errs.count; i++)
            fprintf(stderr, "weft: %s\n", errs.msgs[i]);
        weft_errors_clear(&errs);
        fprintf(stderr, "weft: not signalling: %s is invalid (a reload would be refused anyway)\n", config);
        return 1;
    }
    int rc = 1;
    if (cfg->pid_file == NULL) {
        fprintf(stderr, "weft: %s sets no pid_file, so the running server cannot be found; send it SIGHUP\n",
                config);
    } else {
        FILE *f = fopen(cfg->pid_file, "r");
        int pid = 0;
        if (f == NULL || fscanf(f, "%d", &pid) != 1 || pid <= 0)
            fprintf(stderr, "weft: cannot read a pid from %s: %s\n", cfg->pid_file,
                    f == NULL ? strerror(errno) : "no number in it");
        else if (kill(pid, SIGHUP) != 0)
            fprintf(stderr, "weft: cannot signal pid %d (from %s): %s\n", pid, cfg->pid_file, strerror(errno));
        else {
            fprintf(stderr, "weft: asked pid %d to reload %s\n", pid, config);
            rc = 0;
        }
        if (f != NULL)
            fclose(f);
    }
    weft_config_free(cfg);
    return rc;
}

int main(int argc, char **argv)
{
    /* Before any thread exists (worker pools start while the config is
     * loaded): every thread inherits the mask, so SIGTERM can only reach the
     * control thread's signalfd, never a thread that has not blocked it yet. */
    weft_signals_block_async();
    int reload = argc > 1 && strcmp(argv[1], "reload") == 0;
    if (reload) {
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
        fprintf(stderr, "weft: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        return 2;
    }
    if (reload)
        return signal_running(config);
    weft_generation *gen = load(config, test);
    if (test) {
        if (gen == NULL) {
            fprintf(stderr, "weft: configuration file %s test failed\n", config);
            return 1;
        }
        fprintf(stderr, "weft: configuration file %s is valid (%zu routes, %zu plugins)\n", config, gen->n_routes,
                gen->n_modules);
        weft_generation_release(gen);
        return 0;
    }
    if (gen == NULL) {
        fprintf(stderr, "weft: not starting: configuration file %s is invalid\n", config);
        return 1;
    }
    weft_blocking_configure(gen->cfg->blocking.threshold_ms, gen->cfg->blocking.interval_s);
    return weft_server_run(gen);
}
