/*
 * Tests for server/config.c: weft_config_load on config files written to a
 * private temp directory per test. A good config must parse into the right
 * structures (with the documented defaults); a bad one must be refused with
 * messages that name the file, the line and the setting, all of them at once.
 */
#include "config/config.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/errors.h"
#include "base/log.h"
#include "unit.h"

static char conf_path[320];

static void tmp_setup(void)
{
    wt_unit_setup("config");
    snprintf(conf_path, sizeof(conf_path), "%s/weft.conf", wt_tmpdir);
}

static void tmp_teardown(void) { wt_unit_teardown(); }

static const char *write_conf(const char *text)
{
    FILE *f = fopen(conf_path, "w");
    cr_assert_not_null(f, "fopen %s: %s", conf_path, strerror(errno));
    cr_assert_geq(fputs(text, f), 0);
    cr_assert_eq(fclose(f), 0);
    return conf_path;
}

#define MAX_NEEDLES 5

static void expect_msg1(const weft_errors *e, const char *a, const char *b, const char *c)
{
    const char *needles[] = {a, b, c, NULL};
    wt_expect_msg_v(e, needles);
}

/* ---- good configs ---- */

/* Line numbers matter: the routes' lines are asserted below. */
static const char good_conf[] =
    "# weft unit test config\n"                                                      /* 1 */
    "threads = 3;\n"                                                                 /* 2 */
    "listen = [ \"127.0.0.1:8081\", \"[::1]:8082\", \"0.0.0.0:0\" ];\n"             /* 3 */
    "plugin_dirs = [ \"plugins\", \"/opt/weft/plugins\", \"../elsewhere\" ];\n"      /* 4 */
    "pools = (\n"                                                                    /* 5 */
    "  { name = \"db\"; size = 4; queue = 16; }\n"                                   /* 6 */
    ");\n"                                                                           /* 7 */
    "routes = (\n"                                                                   /* 8 */
    "  { path = \"/hello\"; plugin = \"hello\"; dispatch = \"reactive\"; },\n"       /* 9 */
    "  { path = \"/persons/{id}\"; methods = [\"GET\", \"DELETE\"];\n"               /* 10 */
    "    plugin = \"persons\"; dispatch = \"pool\"; pool = \"db\";\n"                /* 11 */
    "    options = { table = \"people\"; limit = 10; }; },\n"                        /* 12 */
    "  { path = \"/slow\"; plugin = \"delay\"; dispatch = \"pool\"; },\n"            /* 13 */
    "  { path = \"/co\"; methods = [\"POST\"]; plugin = \"echo\"; dispatch = \"coroutine\"; }\n" /* 14 */
    ");\n"                                                                           /* 15 */
    "limits = { max_body = 4096; };\n"                                               /* 16 */
    "log = { level = \"debug\"; access_log = \"/var/log/weft/access.log\"; };\n"      /* 17 */
    "coroutine = { stack_size = 131072; };\n"                                        /* 18 */
    "blocking = { threshold_ms = 50; interval_s = 5; };\n"                           /* 19 */
    "shutdown = { grace_s = 3; };\n";                                                /* 20 */

Test(config, good_config_parses, .init = tmp_setup, .fini = tmp_teardown)
{
    char sub[400];
    snprintf(sub, sizeof(sub), "%s/plugins", wt_tmpdir);
    cr_assert_eq(mkdir(sub, 0700), 0);
    weft_config *cfg = weft_config_load(write_conf(good_conf), &wt_errs);
    cr_assert_not_null(cfg, "good config refused:%s", wt_errs_text(&wt_errs));
    cr_assert_eq(wt_errs.count, 0);
    cr_assert_str_eq(cfg->path, conf_path);

    cr_assert_eq(cfg->threads, 3);

    cr_assert_eq(cfg->n_listen, 3);
    cr_assert_str_eq(cfg->listen[0].host, "127.0.0.1");
    cr_assert_eq(cfg->listen[0].port, 8081);
    cr_assert_str_eq(cfg->listen[1].host, "::1", "brackets must be removed from an IPv6 address");
    cr_assert_eq(cfg->listen[1].port, 8082);
    cr_assert_str_eq(cfg->listen[2].host, "0.0.0.0");
    cr_assert_eq(cfg->listen[2].port, 0, "port 0 (ephemeral) is allowed");
    cr_assert_eq(cfg->listen[0].line, 3);

    /* Relative plugin dirs are relative to the config file, not the cwd. */
    char real_tmp[PATH_MAX], want[PATH_MAX + 32];
    cr_assert_not_null(realpath(wt_tmpdir, real_tmp));
    cr_assert_eq(cfg->n_plugin_dirs, 3);
    snprintf(want, sizeof(want), "%s/plugins", real_tmp);
    cr_assert_str_eq(cfg->plugin_dirs[0], want);
    cr_assert_str_eq(cfg->plugin_dirs[1], "/opt/weft/plugins");
    cr_assert_eq(cfg->plugin_dirs[2][0], '/', "a relative dir must become absolute, got '%s'", cfg->plugin_dirs[2]);
    cr_assert_not_null(strstr(cfg->plugin_dirs[2], "elsewhere"));

    /* The configured pool plus the implicit "default". */
    cr_assert_eq(cfg->n_pools, 2);
    const weft_pool_cfg *db = weft_config_find_pool(cfg, "db");
    cr_assert_not_null(db);
    cr_assert_eq(db->size, 4);
    cr_assert_eq(db->queue, 16);
    cr_assert_eq(db->line, 6);
    const weft_pool_cfg *def = weft_config_find_pool(cfg, "default");
    cr_assert_not_null(def, "the implicit default pool is missing");
    cr_assert_eq(def->size, 200);
    cr_assert_eq(def->queue, 10000);
    cr_assert_null(weft_config_find_pool(cfg, "nope"));

    cr_assert_eq(cfg->n_routes, 4);
    const weft_route_cfg *r = cfg->routes;
    cr_assert_str_eq(r[0].path, "/hello");
    cr_assert_str_eq(r[0].plugin, "hello");
    cr_assert_eq(r[0].dispatch, WEFT_DISPATCH_REACTIVE);
    cr_assert_eq(r[0].methods, WEFT_M_ALL, "no methods list means every method");
    cr_assert_null(r[0].pool);
    cr_assert_null(r[0].options);
    cr_assert_eq(r[0].line, 9);
    cr_assert_str_eq(r[0].file, conf_path);

    cr_assert_str_eq(r[1].path, "/persons/{id}");
    cr_assert_eq(r[1].methods, WEFT_M_GET | WEFT_M_HEAD | WEFT_M_DELETE, "GET implies HEAD; got 0x%x", r[1].methods);
    cr_assert_eq(r[1].dispatch, WEFT_DISPATCH_POOL);
    cr_assert_str_eq(r[1].pool, "db");
    cr_assert_eq(r[1].line, 10);
    cr_assert_not_null(r[1].options);
    const char *table = NULL;
    int limit = 0;
    cr_assert(config_setting_lookup_string(r[1].options, "table", &table));
    cr_assert_str_eq(table, "people");
    cr_assert(config_setting_lookup_int(r[1].options, "limit", &limit));
    cr_assert_eq(limit, 10);

    cr_assert_eq(r[2].dispatch, WEFT_DISPATCH_POOL);
    cr_assert_str_eq(r[2].pool, "default", "dispatch = pool without pool uses \"default\"");
    cr_assert_eq(r[2].line, 13);

    cr_assert_eq(r[3].methods, WEFT_M_POST, "HEAD is added only with GET; got 0x%x", r[3].methods);
    cr_assert_eq(r[3].dispatch, WEFT_DISPATCH_COROUTINE);
    cr_assert_null(r[3].pool);

    cr_assert_eq(cfg->limits.max_body, 4096);
    cr_assert_eq(cfg->log.level, WEFT_LOG_DEBUG);
    cr_assert_eq(cfg->log.request_id_header, WEFT_REQID_ALWAYS, "X-Request-Id on every answer by default");
    cr_assert_str_eq(cfg->log.access_log, "/var/log/weft/access.log");
    cr_assert_eq(cfg->coroutine.stack_size, 131072);
    cr_assert_eq(cfg->blocking.threshold_ms, 50);
    cr_assert_eq(cfg->blocking.interval_s, 5);
    cr_assert_eq(cfg->shutdown.grace_s, 3);
    weft_config_free(cfg);
}

Test(config, defaults, .init = tmp_setup, .fini = tmp_teardown)
{
    weft_config *cfg = weft_config_load(write_conf("# nothing but defaults\n"), &wt_errs);
    cr_assert_not_null(cfg);
    cr_assert_eq(wt_errs.count, 0);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    cr_assert_eq(cfg->threads, ncpu > 0 ? (int)ncpu : 1, "threads defaults to the CPU count");
    cr_assert_eq(cfg->n_listen, 1);
    cr_assert_str_eq(cfg->listen[0].host, "0.0.0.0");
    cr_assert_eq(cfg->listen[0].port, 8080);
    cr_assert_eq(cfg->n_plugin_dirs, 0);
    cr_assert_eq(cfg->n_pools, 1);
    cr_assert_str_eq(cfg->pools[0].name, "default");
    cr_assert_eq(cfg->n_routes, 0);
    cr_assert_eq(cfg->limits.max_resets, 100);
    cr_assert_eq(cfg->limits.reset_window_ms, 10000);
    cr_assert_eq(cfg->limits.max_inflight_per_conn, 256);
    cr_assert_eq(cfg->limits.timeout_ms, 0);
    cr_assert_eq(cfg->limits.max_body, 1024 * 1024);
    cr_assert_eq(cfg->limits.max_connections_per_ip, 0, "no per-address cap unless asked for");
    cr_assert_eq(cfg->log.level, WEFT_LOG_INFO);
    cr_assert_null(cfg->log.access_log);
    cr_assert_eq(cfg->coroutine.stack_size, 64 * 1024);
    cr_assert_eq(cfg->blocking.threshold_ms, 20);
    cr_assert_eq(cfg->blocking.interval_s, 10);
    cr_assert_eq(cfg->shutdown.grace_s, 10);
    weft_config_free(cfg);
}

Test(config, empty_groups_keep_defaults, .init = tmp_setup, .fini = tmp_teardown)
{
    weft_config *cfg = weft_config_load(
        write_conf("limits = {};\nlog = { access_log = \"\"; };\ncoroutine = {};\nblocking = { threshold_ms = 0; };\n"
                   "shutdown = {};\n"),
        &wt_errs);
    cr_assert_not_null(cfg);
    cr_assert_eq(cfg->limits.max_body, 1024 * 1024);
    cr_assert_eq(cfg->log.level, WEFT_LOG_INFO);
    cr_assert_null(cfg->log.access_log, "an empty access_log means none");
    cr_assert_eq(cfg->coroutine.stack_size, 64 * 1024);
    cr_assert_eq(cfg->blocking.threshold_ms, 0);
    cr_assert_eq(cfg->blocking.interval_s, 10);
    cr_assert_eq(cfg->shutdown.grace_s, 10);
    weft_config_free(cfg);
}

Test(config, explicit_default_pool_replaces_implicit_one, .init = tmp_setup, .fini = tmp_teardown)
{
    weft_config *cfg = weft_config_load(
        write_conf("pools = ( { name = \"default\"; size = 8; queue = 0; } );\n"
                   "routes = ( { path = \"/x\"; plugin = \"hello\"; dispatch = \"pool\"; } );\n"),
        &wt_errs);
    cr_assert_not_null(cfg);
    cr_assert_eq(cfg->n_pools, 1, "no second 'default' pool may be added");
    cr_assert_eq(cfg->pools[0].size, 8);
    cr_assert_eq(cfg->pools[0].queue, 0);
    cr_assert_str_eq(cfg->routes[0].pool, "default");
    weft_config_free(cfg);
}

Test(config, methods_list_exactly, .init = tmp_setup, .fini = tmp_teardown)
{
    weft_config *cfg = weft_config_load(
        write_conf("routes = ( { path = \"/x\"; plugin = \"hello\"; dispatch = \"reactive\";\n"
                   "  methods = [\"HEAD\", \"PUT\", \"PATCH\", \"OPTIONS\"]; } );\n"),
        &wt_errs);
    cr_assert_not_null(cfg);
    cr_assert_eq(cfg->routes[0].methods, WEFT_M_HEAD | WEFT_M_PUT | WEFT_M_PATCH | WEFT_M_OPTIONS);
    weft_config_free(cfg);
}

Test(config, route_timeout_defaults_from_limits_and_zero_turns_it_off, .init = tmp_setup, .fini = tmp_teardown)
{
    weft_config *cfg = weft_config_load(
        write_conf("limits = { timeout_ms = 250; };\n"
                   "routes = ( { path = \"/a\"; plugin = \"hello\"; dispatch = \"reactive\"; },\n"
                   "           { path = \"/b\"; plugin = \"hello\"; dispatch = \"reactive\"; timeout_ms = 0; },\n"
                   "           { path = \"/c\"; plugin = \"hello\"; dispatch = \"pool\"; timeout_ms = 40; } );\n"),
        &wt_errs);
    cr_assert_not_null(cfg, "%s", wt_errs_text(&wt_errs));
    cr_assert_eq(cfg->limits.timeout_ms, 250);
    cr_assert_eq(cfg->routes[0].timeout_ms, 250);
    cr_assert_eq(cfg->routes[1].timeout_ms, 0);
    cr_assert_eq(cfg->routes[2].timeout_ms, 40);
    weft_config_free(cfg);
    cfg = weft_config_load(write_conf("routes = ( { path = \"/a\"; plugin = \"hello\"; dispatch = \"reactive\"; } );\n"),
                           &wt_errs);
    cr_assert_not_null(cfg);
    cr_assert_eq(cfg->routes[0].timeout_ms, 0, "no deadline unless configured");
    weft_config_free(cfg);
}

Test(config, missing_file_names_file_and_errno, .init = tmp_setup, .fini = tmp_teardown)
{
    char path[400];
    snprintf(path, sizeof(path), "%s/does-not-exist.conf", wt_tmpdir);
    cr_assert_null(weft_config_load(path, &wt_errs));
    cr_assert_eq(wt_errs.count, 1);
    expect_msg1(&wt_errs, path, "cannot open config file", strerror(ENOENT));
    weft_errors_clear(&wt_errs);
}

Test(config, unreadable_directory_as_file, .init = tmp_setup, .fini = tmp_teardown)
{
    /* A directory opens with fopen on Linux but cannot be read as a config. */
    cr_assert_null(weft_config_load(wt_tmpdir, &wt_errs));
    cr_assert_geq(wt_errs.count, 1);
    cr_assert_not_null(strstr(wt_errs.msgs[0], wt_tmpdir), "message must name the file: %s", wt_errs.msgs[0]);
    weft_errors_clear(&wt_errs);
}

/* ---- one bad config per kind of error ---- */

typedef struct bad_case {
    const char *name;
    const char *conf;
    const char *needles[MAX_NEEDLES]; /* all in one message; NULL-terminated */
} bad_case;

static const bad_case bad_cases[] = {
    {"syntax error",
     "threads = 2;\n"                          /* 1 */
     "listen = [\"127.0.0.1:0\"];\n"           /* 2 */
     "routes = (\n"                            /* 3 */
     "  { path = \"/a\"; plugin = ; }\n"       /* 4 */
     ");\n",
     {"weft.conf:4: ", "syntax error"}},
    {"unknown top-level key",
     "threads = 2;\n"                          /* 1 */
     "\n"                                      /* 2 */
     "listn = [\"127.0.0.1:0\"];\n",           /* 3 */
     {"weft.conf:3: ", "top level", "unknown setting 'listn'", "listen"}},
    {"unknown route key",
     "routes = (\n"                            /* 1 */
     "  {\n"                                   /* 2 */
     "    path = \"/a\";\n"                    /* 3 */
     "    plugin = \"hello\";\n"               /* 4 */
     "    dispatch = \"reactive\";\n"          /* 5 */
     "    method = [\"GET\"];\n"               /* 6 */
     "  }\n"                                   /* 7 */
     ");\n",
     {"weft.conf:6: ", "routes[0]", "unknown setting 'method'", "methods"}},
    {"unknown key in a group",
     "log = {\n"                               /* 1 */
     "  level = \"info\";\n"                   /* 2 */
     "  acces_log = \"/tmp/a.log\";\n"         /* 3 */
     "};\n",
     {"weft.conf:3: ", "log", "unknown setting 'acces_log'"}},
    {"wrong type",
     "# threads must be a number\n"            /* 1 */
     "threads = \"two\";\n",                   /* 2 */
     {"weft.conf:2: ", "threads", "must be an integer, not a string"}},
    {"wrong type in a group",
     "limits = {\n"                            /* 1 */
     "  max_body = 1.5;\n"                     /* 2 */
     "};\n",
     {"weft.conf:2: ", "limits.max_body", "must be an integer"}},
    {"per-address cap out of range",
     "limits = { max_connections_per_ip = -1; };\n",
     {"weft.conf:1: ", "limits.max_connections_per_ip", "between 0 and", "got -1"}},
    {"listen not a list",
     "listen = \"127.0.0.1:80\";\n",           /* 1 */
     {"weft.conf:1: ", "listen", "must be an array"}},
    {"route timeout out of range",
     "routes = ( { path = \"/x\"; plugin = \"hello\"; dispatch = \"reactive\";\n" /* 1 */
     "  timeout_ms = -5; } );\n",                                                  /* 2 */
     {"weft.conf:2: ", "routes[0].timeout_ms", "between 0 and 3600000", "got -5"}},
    {"out of range low",
     "\n\n"                                    /* 1-2 */
     "threads = 0;\n",                         /* 3 */
     {"weft.conf:3: ", "threads", "between 1 and 1024", "got 0"}},
    {"out of range high",
     "threads = 5000;\n",                      /* 1 */
     {"weft.conf:1: ", "threads", "got 5000"}},
    {"pool size out of range",
     "pools = (\n"                             /* 1 */
     "  { name = \"db\";\n"                    /* 2 */
     "    size = 0; }\n"                       /* 3 */
     ");\n",
     {"weft.conf:3: ", "pools[0].size", "between 1 and"}},
    /* libconfig dates a scalar list element by the token after it, so the
     * bad element is followed by a comma on its own line. */
    {"bad listen address",
     "listen = [\n"                            /* 1 */
     "  \"127.0.0.1:8080\",\n"                 /* 2 */
     "  \"localhost:8080\",\n"                 /* 3 */
     "  \"[::]:8080\"\n"                       /* 4 */
     "];\n",
     {"weft.conf:3: ", "listen[1]", "'localhost' is not a numeric IPv4 or IPv6 address"}},
    {"bad IPv4 address",
     "listen = [ \"256.1.1.1:80\" ];\n",
     {"weft.conf:1: ", "listen[0]", "256.1.1.1"}},
    {"bad listen port",
     "\n"                                      /* 1 */
     "listen = [ \"127.0.0.1:65536\" ];\n",    /* 2 */
     {"weft.conf:2: ", "listen[0]", "'65536' is not a port number"}},
    {"non-numeric port",
     "listen = [ \"[::1]:http\" ];\n",
     {"weft.conf:1: ", "listen[0]", "'http' is not a port number"}},
    {"no port at all",
     "listen = [ \"127.0.0.1\" ];\n",
     {"weft.conf:1: ", "listen[0]", "is not ADDRESS:PORT"}},
    {"empty port",
     "listen = [ \"127.0.0.1:\" ];\n",
     {"weft.conf:1: ", "listen[0]", "is not a port number"}},
    {"unbalanced IPv6 brackets",
     "listen = [ \"[::1:8080\" ];\n",
     {"weft.conf:1: ", "listen[0]", "unbalanced"}},
    {"empty listen list",
     "listen = [ ];\n",
     {"weft.conf:1: ", "listen", "at least one address"}},
    {"bad dispatch",
     "routes = (\n"                            /* 1 */
     "  { path = \"/a\";\n"                    /* 2 */
     "    plugin = \"hello\";\n"               /* 3 */
     "    dispatch = \"threads\"; }\n"         /* 4 */
     ");\n",
     {"weft.conf:4: ", "routes[0]", "dispatch 'threads' is not one of pool, coroutine, reactive"}},
    {"pool undefined",
     "pools = ( { name = \"db\"; } );\n"       /* 1 */
     "routes = (\n"                            /* 2 */
     "  { path = \"/a\"; plugin = \"hello\"; dispatch = \"pool\";\n" /* 3 */
     "    pool = \"dbx\"; }\n"                 /* 4 */
     ");\n",
     {"weft.conf:4: ", "routes[0]", "pool 'dbx' is not defined"}},
    {"pool with non-pool dispatch",
     "routes = (\n"                            /* 1 */
     "  { path = \"/a\"; plugin = \"hello\"; dispatch = \"coroutine\";\n" /* 2 */
     "    pool = \"default\"; }\n"             /* 3 */
     ");\n",
     {"weft.conf:3: ", "routes[0]", "pool is only meaningful with dispatch = \"pool\""}},
    {"unknown method",
     "routes = (\n"                            /* 1 */
     "  { path = \"/a\"; plugin = \"hello\"; dispatch = \"reactive\";\n" /* 2 */
     "    methods = [\n"                       /* 3 */
     "      \"GET\",\n"                        /* 4 */
     "      \"FETCH\" ]; }\n"                  /* 5 */
     ");\n",
     {"weft.conf:5: ", "routes[0]", "'FETCH' is not one of GET"}},
    {"method names are case-sensitive",
     "routes = ( { path = \"/a\"; plugin = \"hello\"; dispatch = \"reactive\"; methods = [\"get\"]; } );\n",
     {"weft.conf:1: ", "routes[0]", "'get' is not one of"}},
    {"empty methods list",
     "routes = ( { path = \"/a\"; plugin = \"hello\"; dispatch = \"reactive\"; methods = []; } );\n",
     {"weft.conf:1: ", "routes[0]", "empty list"}},
    {"plugin name with ../",
     "routes = (\n"                            /* 1 */
     "  { path = \"/a\"; dispatch = \"reactive\";\n" /* 2 */
     "    plugin = \"../evil\"; }\n"           /* 3 */
     ");\n",
     {"weft.conf:3: ", "routes[0]", "plugin '../evil'", "no paths"}},
    {"plugin name with /",
     "routes = (\n"                            /* 1 */
     "  { path = \"/a\"; dispatch = \"reactive\";\n" /* 2 */
     "\n"                                      /* 3 */
     "    plugin = \"/usr/lib/evil\"; }\n"     /* 4 */
     ");\n",
     {"weft.conf:4: ", "routes[0]", "plugin '/usr/lib/evil'"}},
    {"plugin name uppercase",
     "routes = ( { path = \"/a\"; dispatch = \"reactive\"; plugin = \"Hello\"; } );\n",
     {"weft.conf:1: ", "plugin 'Hello'"}},
    {"missing path",
     "routes = (\n"                            /* 1 */
     "  { plugin = \"hello\"; dispatch = \"reactive\"; }\n" /* 2 */
     ");\n",
     {"weft.conf:2: ", "routes[0].path", "is required"}},
    {"missing plugin",
     "routes = (\n"                            /* 1 */
     "  { path = \"/a\"; dispatch = \"reactive\"; }\n" /* 2 */
     ");\n",
     {"weft.conf:2: ", "routes[0].plugin", "is required"}},
    {"missing dispatch",
     "routes = (\n"                            /* 1 */
     "  { path = \"/a\"; plugin = \"hello\"; }\n" /* 2 */
     ");\n",
     {"weft.conf:2: ", "routes[0].dispatch", "is required"}},
    {"path with empty segment",
     "routes = (\n"                            /* 1 */
     "  { plugin = \"hello\"; dispatch = \"reactive\";\n" /* 2 */
     "    path = \"/a//b\"; }\n"               /* 3 */
     ");\n",
     {"weft.conf:3: ", "routes[0]", "path '/a//b'", "empty segment"}},
    {"path without leading slash",
     "routes = ( { plugin = \"hello\"; dispatch = \"reactive\"; path = \"persons/{id}\"; } );\n",
     {"weft.conf:1: ", "path 'persons/{id}'", "must start with '/'"}},
    {"path with partial parameter",
     "routes = ( { plugin = \"hello\"; dispatch = \"reactive\"; path = \"/x{id}\"; } );\n",
     {"weft.conf:1: ", "path '/x{id}'", "whole segment"}},
    {"route not a group",
     "routes = ( \"/a\" );\n",
     {"weft.conf:1: ", "routes[0]", "must be a group"}},
    {"options not a group",
     "routes = (\n"                            /* 1 */
     "  { path = \"/a\"; plugin = \"hello\"; dispatch = \"reactive\";\n" /* 2 */
     "    options = 5; }\n"                    /* 3 */
     ");\n",
     {"weft.conf:3: ", "routes[0].options", "must be a group"}},
    {"bad pool name",
     "pools = ( { name = \"Big Pool\"; } );\n",
     {"weft.conf:1: ", "pools[0]", "'Big Pool'"}},
    {"duplicate pool",
     "pools = (\n"                             /* 1 */
     "  { name = \"db\"; },\n"                 /* 2 */
     "  { name = \"db\"; }\n"                  /* 3 */
     ");\n",
     {"weft.conf:3: ", "pools[1]", "'db' is defined twice"}},
    {"bad log level",
     "log = { level = \"verbose\"; };\n",
     {"weft.conf:1: ", "log.level", "'verbose'"}},
    {"bad observability place",
     "observability = {\n  metrics = \"elsewhere\";\n};\n",
     {"weft.conf:2: ", "observability.metrics", "'elsewhere'", "is not one of main, admin, off"}},
    {"bad request id header mode",
     "log = {\n  request_id_header = \"sometimes\";\n};\n",
     {"weft.conf:2: ", "log.request_id_header", "'sometimes'", "always, when_sent, never"}},
};

#define N_BAD (sizeof(bad_cases) / sizeof(bad_cases[0]))

/*
 * Criterion runs each test in a freshly exec'd process with its own address
 * layout (ASLR stays on), so a parameter must not carry pointers into the
 * parent's memory: the parameter is an index into bad_cases instead.
 */
static size_t bad_index[N_BAD];

static struct criterion_test_params bad_params(void)
{
    for (size_t i = 0; i < N_BAD; i++)
        bad_index[i] = i;
    return cr_make_param_array(size_t, bad_index, N_BAD);
}

/* Each case above has exactly one mistake. */
ParameterizedTestParameters(config, bad)
{
    return bad_params();
}

ParameterizedTest(const size_t *idx, config, bad, .init = tmp_setup, .fini = tmp_teardown)
{
    const bad_case *c = &bad_cases[*idx];
    weft_config *cfg = weft_config_load(write_conf(c->conf), &wt_errs);
    cr_assert_null(cfg, "[%s] a bad config was accepted", c->name);
    cr_assert_geq(wt_errs.count, 1, "[%s] refused without a message", c->name);
    const char *needles[MAX_NEEDLES + 1] = {0};
    for (int i = 0; i < MAX_NEEDLES && c->needles[i] != NULL; i++)
        needles[i] = c->needles[i];
    wt_expect_msg_v(&wt_errs, needles);
    /* Every message names the config file it is about. */
    for (size_t i = 0; i < wt_errs.count; i++)
        cr_expect_not_null(strstr(wt_errs.msgs[i], conf_path), "[%s] message without the file name: %s", c->name,
                           wt_errs.msgs[i]);
    weft_errors_clear(&wt_errs);
}

/* A single mistake yields a single message: no follow-on noise. */
ParameterizedTestParameters(config, bad_once)
{
    return bad_params();
}

ParameterizedTest(const size_t *idx, config, bad_once, .init = tmp_setup, .fini = tmp_teardown)
{
    const bad_case *c = &bad_cases[*idx];
    cr_assert_null(weft_config_load(write_conf(c->conf), &wt_errs));
    cr_expect_eq(wt_errs.count, 1, "[%s] expected exactly one message, got %zu:%s", c->name, wt_errs.count,
                 wt_errs_text(&wt_errs));
    weft_errors_clear(&wt_errs);
}

Test(config, several_errors_at_once, .init = tmp_setup, .fini = tmp_teardown)
{
    static const char conf[] =
        "threads = 0;\n"                                                    /* 1 */
        "listen = [ \"127.0.0.1:99999\" ];\n"                               /* 2 */
        "colour = \"blue\";\n"                                              /* 3 */
        "routes = (\n"                                                      /* 4 */
        "  { path = \"/ok\"; plugin = \"hello\"; dispatch = \"reactive\"; },\n" /* 5 */
        "  { path = \"/a\"; plugin = \"hello\";\n"                          /* 6 */
        "    dispatch = \"fibers\"; },\n"                                   /* 7 */
        "  { path = \"/b\"; dispatch = \"reactive\"; },\n"                  /* 8 */
        "  { path = \"/c/{}\"; plugin = \"hello\"; dispatch = \"reactive\"; }\n" /* 9 */
        ");\n"                                                              /* 10 */
        "shutdown = { grace_s = -1; };\n";                                  /* 11 */
    cr_assert_null(weft_config_load(write_conf(conf), &wt_errs));
    cr_expect_eq(wt_errs.count, 7, "expected 7 messages, got %zu:%s", wt_errs.count, wt_errs_text(&wt_errs));
    expect_msg1(&wt_errs, "weft.conf:1: ", "threads", "got 0");
    expect_msg1(&wt_errs, "weft.conf:2: ", "listen[0]", "99999");
    expect_msg1(&wt_errs, "weft.conf:3: ", "top level", "'colour'");
    expect_msg1(&wt_errs, "weft.conf:7: ", "routes[1]", "'fibers'");
    expect_msg1(&wt_errs, "weft.conf:8: ", "routes[2].plugin", "is required");
    expect_msg1(&wt_errs, "weft.conf:9: ", "routes[3]", "'{}'");
    expect_msg1(&wt_errs, "weft.conf:11: ", "shutdown.grace_s", "got -1");
    weft_errors_clear(&wt_errs);
}

/* database.pooler decides the default of database.prepared; listen_conninfo is kept as written. */
Test(config, database_pooler_and_its_defaults, .init = tmp_setup, .fini = tmp_teardown)
{
    static const struct {
        const char *conf;
        int pooler, unnamed;
        const char *listen;
    } cases[] = {
        {"database = {};\n", WEFT_POOLER_NONE, 0, NULL},
        {"database = { pooler = \"session\"; };\n", WEFT_POOLER_SESSION, 0, NULL},
        {"database = { pooler = \"transaction\"; listen_conninfo = \"host=db\"; };\n", WEFT_POOLER_TRANSACTION, 1,
         "host=db"},
        {"database = { pooler = \"transaction\"; prepared = true; };\n", WEFT_POOLER_TRANSACTION, 0, NULL},
        {"database = { prepared = false; };\n", WEFT_POOLER_NONE, 1, NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        weft_config *cfg = weft_config_load(write_conf(cases[i].conf), &wt_errs);
        cr_assert_not_null(cfg, "%s: %s", cases[i].conf, wt_errs_text(&wt_errs));
        cr_assert_eq(cfg->database.pooler, cases[i].pooler, "%s", cases[i].conf);
        cr_assert_eq(cfg->database.unnamed, cases[i].unnamed, "%s", cases[i].conf);
        if (cases[i].listen == NULL)
            cr_assert_null(cfg->database.listen_conninfo);
        else
            cr_assert_str_eq(cfg->database.listen_conninfo, cases[i].listen);
        weft_config_free(cfg);
    }
}

Test(config, bad_database_pooler_settings_are_named, .init = tmp_setup, .fini = tmp_teardown)
{
    cr_assert_null(weft_config_load(write_conf("database = {\n"
                                               "  pooler = \"pgbouncer\";\n"
                                               "  prepared = \"yes\";\n"
                                               "};\n"),
                                    &wt_errs));
    expect_msg1(&wt_errs, "weft.conf:2: ", "database.pooler", "'pgbouncer' is not one of none, session, transaction");
    expect_msg1(&wt_errs, "weft.conf:3: ", "database.prepared", "");
    weft_errors_clear(&wt_errs);
}

Test(config, two_routes_missing_dispatch_both_reported, .init = tmp_setup, .fini = tmp_teardown)
{
    cr_assert_null(weft_config_load(write_conf("routes = (\n"
                                               "  { path = \"/a\"; plugin = \"hello\"; },\n"
                                               "  { path = \"/b\"; plugin = \"hello\";\n"
                                               "  }\n"
                                               ");\n"),
                                    &wt_errs));
    cr_assert_eq(wt_errs.count, 2);
    expect_msg1(&wt_errs, "weft.conf:2: ", "routes[0].dispatch", "is required");
    expect_msg1(&wt_errs, "weft.conf:3: ", "routes[1].dispatch", "is required");
    weft_errors_clear(&wt_errs);
}

/* ---- helpers exported by config.c ---- */

Test(config, method_bits_and_format)
{
    cr_assert_eq(weft_method_bit("GET", 3), WEFT_M_GET);
    cr_assert_eq(weft_method_bit("OPTIONS", 7), WEFT_M_OPTIONS);
    cr_assert_eq(weft_method_bit("GETX", 3), WEFT_M_GET, "only len bytes count");
    cr_assert_eq(weft_method_bit("GET", 2), WEFT_M_OTHER);
    cr_assert_eq(weft_method_bit("get", 3), WEFT_M_OTHER, "method names are case-sensitive");
    cr_assert_eq(weft_method_bit("PROPFIND", 8), WEFT_M_OTHER);
    char buf[128];
    weft_methods_format(WEFT_M_GET | WEFT_M_HEAD | WEFT_M_POST, buf, sizeof(buf));
    cr_assert_str_eq(buf, "GET, HEAD, POST");
    weft_methods_format(WEFT_M_DELETE, buf, sizeof(buf));
    cr_assert_str_eq(buf, "DELETE");
    weft_methods_format(0, buf, sizeof(buf));
    cr_assert_str_eq(buf, "");
    char tiny[8];
    memset(tiny, 'x', sizeof(tiny));
    weft_methods_format(WEFT_M_ALL, tiny, sizeof(tiny));
    cr_assert_lt(strlen(tiny), sizeof(tiny), "output must stay NUL-terminated inside the buffer");
    cr_assert_str_eq(weft_dispatch_name(WEFT_DISPATCH_POOL), "pool");
    cr_assert_str_eq(weft_dispatch_name(WEFT_DISPATCH_COROUTINE), "coroutine");
    cr_assert_str_eq(weft_dispatch_name(WEFT_DISPATCH_REACTIVE), "reactive");
}
