/*
 * The config from the environment and from credentials: ${VAR} and
 * ${VAR:-default} in string settings (config/expand.c), `credential:NAME`
 * for the secret files (config/schema.c), and the default config's
 * /aggregate upstream following PORT.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/errors.h"
#include "config/config.h"
#include "config/expand.h"
#include "unit.h"

static char conf_path[320];

static void setup(void)
{
    wt_unit_setup("config_env");
    snprintf(conf_path, sizeof(conf_path), "%s/weft.conf", wt_tmpdir);
    unsetenv("CREDENTIALS_DIRECTORY");
    unsetenv("PORT");
}

static void teardown(void) { wt_unit_teardown(); }

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    cr_assert_geq(fputs(text, f), 0);
    cr_assert_eq(fclose(f), 0);
}

static weft_config *load(const char *text)
{
    write_file(conf_path, text);
    return weft_config_load(conf_path, &wt_errs);
}

TestSuite(config_env, .init = setup, .fini = teardown);

Test(config_env, variables_expand_with_and_without_defaults)
{
    setenv("WEFT_T_DIR", "/srv/weft", 1);
    setenv("WEFT_T_EMPTY", "", 1);
    unsetenv("WEFT_T_UNSET");
    weft_config *cfg = load("pid_file = \"${WEFT_T_DIR}/run/weft.pid\";\n"
                            "state_dir = \"${WEFT_T_UNSET:-/var/lib/x}\";\n"
                            "user = \"${WEFT_T_EMPTY:-nobody}\";\n"
                            "log = { access_log = \"/$${literal}-${WEFT_T_EMPTY}\"; };\n");
    cr_assert_not_null(cfg, "%s", wt_errs_text(&wt_errs));
    cr_assert_str_eq(cfg->pid_file, "/srv/weft/run/weft.pid");
    cr_assert_str_eq(cfg->state_dir, "/var/lib/x");
    cr_assert_str_eq(cfg->user, "nobody", "an empty variable takes the default, as in a shell");
    cr_assert_str_eq(cfg->log.access_log, "/${literal}-", "$${ is a literal ${; a set empty variable is empty");
    weft_config_free(cfg);
}

Test(config_env, unset_variable_without_default_is_an_error_with_file_line)
{
    unsetenv("WEFT_T_UNSET");
    cr_assert_null(load("threads = 1;\n\npid_file = \"${WEFT_T_UNSET}/weft.pid\";\n"));
    wt_expect_msg(&wt_errs, "weft.conf:3: ", "pid_file", "${WEFT_T_UNSET} is not set", "${WEFT_T_UNSET:-value}");
    weft_errors_clear(&wt_errs);
    cr_assert_null(load("user = \"${1BAD}\";\n"));
    wt_expect_msg(&wt_errs, "weft.conf:1: ", "user", "${NAME:-default}");
}

Test(config_env, route_fragments_and_plugin_options_expand_too)
{
    setenv("WEFT_T_TAG", "from-env", 1);
    char dir[400], frag[500];
    snprintf(dir, sizeof(dir), "%s/routes.d", wt_tmpdir);
    cr_assert_eq(mkdir(dir, 0755), 0);
    snprintf(frag, sizeof(frag), "%s/a.conf", dir);
    write_file(frag, "routes = ( { path = \"/${WEFT_T_MISSING:-a}\"; plugin = \"echo\"; dispatch = \"reactive\";\n"
                     "  options = { tag = \"${WEFT_T_TAG}\"; }; } );\n");
    weft_config *cfg = load("routes = ();\n");
    cr_assert_not_null(cfg, "%s", wt_errs_text(&wt_errs));
    cr_assert_eq(cfg->n_routes, 1);
    cr_assert_str_eq(cfg->routes[0].path, "/a");
    cr_assert_str_eq(config_setting_get_string(config_setting_get_member(cfg->routes[0].options, "tag")), "from-env");
    weft_config_free(cfg);
}

Test(config_env, credentials_name_files_in_the_credentials_directory)
{
    char creds[400], path[500];
    snprintf(creds, sizeof(creds), "%s/creds", wt_tmpdir);
    cr_assert_eq(mkdir(creds, 0700), 0);
    snprintf(path, sizeof(path), "%s/admin_token", creds);
    write_file(path, "0123456789abcdef0123\n");
    snprintf(path, sizeof(path), "%s/db_password", creds);
    write_file(path, "s3cr3t 'quoted'\n");
    const char *conf = "admin = { listen = \"127.0.0.1:0\"; token_file = \"credential:admin_token\"; };\n"
                       "database = { conninfo = \"dbname=weft\"; password_file = \"credential:db_password\"; };\n";
    /* Without LoadCredential= the name means nothing: said, with the line. */
    cr_assert_null(load(conf));
    wt_expect_msg(&wt_errs, "weft.conf:1: ", "admin.token_file", "CREDENTIALS_DIRECTORY is not set");
    wt_expect_msg(&wt_errs, "weft.conf:2: ", "database.password_file", "CREDENTIALS_DIRECTORY is not set");
    weft_errors_clear(&wt_errs);

    setenv("CREDENTIALS_DIRECTORY", creds, 1);
    weft_config *cfg = load(conf);
    cr_assert_not_null(cfg, "%s", wt_errs_text(&wt_errs));
    cr_assert_str_eq(cfg->admin.token, "0123456789abcdef0123");
    cr_assert_str_eq(cfg->database.password, "s3cr3t 'quoted'", "the file as it is, minus its newline");
    weft_config_free(cfg);

    cr_assert_null(load("database = { password_file = \"credential:../etc/shadow\"; };\n"));
    wt_expect_msg(&wt_errs, "weft.conf:1: ", "without '/'");
    weft_errors_clear(&wt_errs);
    cr_assert_null(load("database = { password_file = \"credential:absent\"; };\n"));
    wt_expect_msg(&wt_errs, "weft.conf:1: ", "cannot read", "/creds/absent");
}

Test(config_env, tls_key_from_a_credential)
{
    char creds[400];
    snprintf(creds, sizeof(creds), "%s/creds", wt_tmpdir);
    cr_assert_eq(mkdir(creds, 0700), 0);
    setenv("CREDENTIALS_DIRECTORY", creds, 1);
    weft_config *cfg = load("listen = ( { address = \"127.0.0.1:0\"; tls = { certificate = \"cert.pem\"; "
                            "key = \"credential:tls.key\"; }; } );\n");
    cr_assert_not_null(cfg, "%s", wt_errs_text(&wt_errs));
    char want[500];
    snprintf(want, sizeof(want), "%s/tls.key", creds);
    cr_assert_str_eq(cfg->listen[0].tls->key, want);
    weft_config_free(cfg);
}

/* The default config calls its own /persons through /aggregate: on the
 * port PORT moved the listener to, not a fixed 8080. */
Test(config_env, default_config_aggregate_upstream_follows_port)
{
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1)
            setenv("PORT", "18123", 1);
        weft_config *cfg = weft_config_load(WEFT_SOURCE_DIR "/etc/weft.conf", &wt_errs);
        cr_assert_not_null(cfg, "%s", wt_errs_text(&wt_errs));
        size_t seen = 0;
        for (size_t i = 0; i < cfg->n_routes; i++) {
            if (strcmp(cfg->routes[i].plugin, "aggregate") != 0)
                continue;
            const char *up = config_setting_get_string(config_setting_get_member(cfg->routes[i].options, "upstream"));
            cr_assert_str_eq(up, pass == 0 ? "http://127.0.0.1:8080" : "http://127.0.0.1:18123", "%s",
                             cfg->routes[i].path);
            seen++;
        }
        cr_assert_eq(seen, 3, "the three /aggregate routes");
        weft_config_free(cfg);
    }
}

/* @include reads another file in place; its settings expand too, and an
 * error names the included file and its own line. */
Test(config_env, included_files_expand_and_name_their_own_lines)
{
    char inc[400];
    snprintf(inc, sizeof(inc), "%s/db.conf", wt_tmpdir);
    write_file(inc, "# the database, kept apart\n\ndatabase = { conninfo = \"host=${WEFT_T_DBHOST} dbname=weft\"; };\n");
    unsetenv("WEFT_T_DBHOST");
    cr_assert_null(load("threads = 1;\n@include \"db.conf\"\n"));
    wt_expect_msg(&wt_errs, "db.conf:3: ", "conninfo", "${WEFT_T_DBHOST} is not set");
    weft_errors_clear(&wt_errs);
    setenv("WEFT_T_DBHOST", "db.internal", 1);
    weft_config *cfg = load("threads = 1;\n@include \"db.conf\"\n");
    cr_assert_not_null(cfg, "%s", wt_errs_text(&wt_errs));
    cr_assert_str_eq(cfg->database.conninfo, "host=db.internal dbname=weft");
    weft_config_free(cfg);
}

/* Issue 44 #9: a name past 255 characters was cut to 255, so ${LONG...}
 * silently read another variable (the one named by its first 255). */
Test(config_env, an_over_long_variable_name_is_refused_not_cut)
{
    char name[301], text[700];
    memset(name, 'A', 300);
    name[300] = '\0';
    name[255] = '\0';
    setenv(name, "/the/wrong/one", 1); /* what the cut name read */
    name[255] = 'A';
    snprintf(text, sizeof(text), "threads = 1;\npid_file = \"${%s}/weft.pid\";\n", name);
    cr_assert_null(load(text), "a 300-character name was accepted");
    wt_expect_msg(&wt_errs, "weft.conf:2: ", "pid_file", "at most 255 characters", "has 300");
    weft_errors_clear(&wt_errs);

    name[255] = '\0'; /* exactly 255: still a name */
    snprintf(text, sizeof(text), "threads = 1;\npid_file = \"${%s}/weft.pid\";\n", name);
    weft_config *cfg = load(text);
    cr_assert_not_null(cfg, "%s", wt_errs_text(&wt_errs));
    cr_assert_str_eq(cfg->pid_file, "/the/wrong/one/weft.pid");
    weft_config_free(cfg);
    unsetenv(name);
}
