/*
 * Tests for server/ops/metrics.c and process_metrics.c: the whole /metrics
 * text rendered from a generation built in this process (no server, no
 * listener), for routes whose paths hold a quote, a backslash and a newline,
 * under every policy (auto too, so the policy families have rows), with
 * requests recorded and two plugins sharing one series name. The text is
 * read back by a small exposition parser here, and by promtool when the
 * machine has it (tests/integration/promtool.c lints a real server's
 * scrapes; this one needs none).
 */
#include "ops/metrics.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "base/custom_stats.h"
#include "base/stats.h"
#include "plugin/module.h"
#include "reload/generation.h"
#include "unit.h"

static weft_generation *gen;
static char *text;

static void setup(void)
{
    unsetenv("WEFT_PLUGIN_PATH");
    wt_unit_setup("metrics");
}

static void teardown(void)
{
    free(text);
    text = NULL;
    if (gen != NULL)
        weft_generation_release(gen);
    gen = NULL;
    weft_stats_loops_free();
    weft_module_cleanup();
    wt_unit_teardown();
}

TestSuite(metrics, .init = setup, .fini = teardown, .timeout = 60);

/* The config's paths as libconfig reads them: "\"", "\\" and "\n" are escapes there too. */
#define P_QUOTE "/q\"uote"
#define P_BACKSLASH "/back\\slash"
#define P_NEWLINE "/new\nline"

static weft_route *route_at(const char *path)
{
    for (size_t i = 0; i < gen->n_routes; i++)
        if (strcmp(gen->routes[i].cfg->path, path) == 0)
            return &gen->routes[i];
    cr_assert_fail("no route %s", path);
    return NULL;
}

/* A served generation (metrics series, a pool, an auto state), requests recorded on two loops, rendered. */
static void render(void)
{
    char path[400];
    snprintf(path, sizeof(path), "%s/weft.conf", wt_tmpdir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fprintf(f,
            "plugin_dirs = [ \"%s\" ];\n"
            "pools = ( { name = \"default\"; size = 1; queue = 4; } );\n"
            "routes = (\n"
            "  { path = \"/plain\"; plugin = \"echo\"; dispatch = \"reactive\"; },\n"
            "  { path = \"/q\\\"uote\"; plugin = \"echo\"; dispatch = \"coroutine\"; },\n"
            "  { path = \"/back\\\\slash\"; plugin = \"echo\"; dispatch = \"pool\"; },\n"
            "  { path = \"/new\\nline\"; plugin = \"echo\"; dispatch = \"auto\"; }\n"
            ");\n",
            WEFT_FIXTURE_DIR);
    cr_assert_eq(fclose(f), 0);
    weft_config *cfg = weft_config_load(path, &wt_errs);
    cr_assert_not_null(cfg, "config refused:%s", wt_errs_text(&wt_errs));
    gen = weft_generation_build(cfg, 7, 0, &wt_errs);
    cr_assert_not_null(gen, "generation refused:%s", wt_errs_text(&wt_errs));

    weft_loop_stats *l0 = weft_stats_loop_new(), *l1 = weft_stats_loop_new();
    cr_assert(l0 != NULL && l1 != NULL);
    int q = route_at(P_QUOTE)->stat_slot;
    cr_assert_geq(q, 0, "a served route has a metrics series");
    weft_stats_request(l0, q, 200, 300000);     /* 0.3 ms */
    weft_stats_request(l1, q, 404, 20000000);   /* 20 ms */
    weft_stats_request(l1, q, 503, 2000000000); /* 2 s */

    char why[300];
    weft_cstat *a = weft_cstat_declare("alpha", "jobs_total", WEFT_CSTAT_COUNTER, "Jobs done.", why, sizeof(why));
    weft_cstat *b = weft_cstat_declare("beta", "jobs_total", WEFT_CSTAT_COUNTER, "Jobs done.", why, sizeof(why));
    cr_assert(a != NULL && b != NULL, "%s", why);
    weft_cstat_add(a, 3);
    weft_cstat_add(b, 5);

    size_t len = 0;
    text = weft_metrics_render(gen, &len);
    cr_assert_not_null(text);
    cr_assert_eq(strlen(text), len, "the length is the text's, and the text holds no NUL");
}

/* ---- a small reader of text format 0.0.4 ---- */

typedef struct sample {
    char name[128];
    char labels[512]; /* the raw text between the braces, le="..." left out */
    char le[32];      /* a bucket's bound, "" for other samples */
    double value;
} sample;

/* Reads `name{k="v",...} value` from `line`; 0, or -1 with `why`. Label
 * values may hold only the three escapes \\ \" \n. */
static int parse_sample(const char *line, sample *s, char *why, size_t size)
{
    memset(s, 0, sizeof(*s));
    size_t n = strspn(line, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_:");
    if (n == 0 || n >= sizeof(s->name))
        return snprintf(why, size, "no metric name"), -1;
    memcpy(s->name, line, n);
    const char *p = line + n;
    size_t out = 0;
    if (*p == '{') {
        p++;
        while (*p != '}') {
            const char *key = p;
            size_t kl = strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");
            if (kl == 0 || p[kl] != '=' || p[kl + 1] != '"')
                return snprintf(why, size, "bad label at '%s'", p), -1;
            p += kl + 2;
            const char *val = p;
            while (*p != '"') {
                if (*p == '\0')
                    return snprintf(why, size, "unterminated label value"), -1;
                if (*p == '\\' && p[1] != '\\' && p[1] != '"' && p[1] != 'n')
                    return snprintf(why, size, "bad escape \\%c", p[1]), -1;
                p += *p == '\\' ? 2 : 1;
            }
            size_t vl = (size_t)(p - val);
            p++;
            if (kl == 2 && strncmp(key, "le", 2) == 0)
                snprintf(s->le, sizeof(s->le), "%.*s", (int)vl, val);
            else
                out += (size_t)snprintf(s->labels + out, sizeof(s->labels) - out, "%s%.*s", out ? "," : "",
                                        (int)(p - key), key);
            if (*p == ',')
                p++;
            else if (*p != '}')
                return snprintf(why, size, "no ',' or '}' after a label"), -1;
        }
        p++;
    }
    char *end;
    if (*p != ' ')
        return snprintf(why, size, "no space before the value"), -1;
    s->value = strcmp(p + 1, "+Inf") == 0 ? 1.0 / 0.0 : strtod(p + 1, &end);
    if (strcmp(p + 1, "+Inf") != 0 && (end == p + 1 || *end != '\0'))
        return snprintf(why, size, "bad value '%s'", p + 1), -1;
    return 0;
}

/* The family a sample belongs to, given the family's type. */
static int in_family(const char *name, const char *family, const char *type)
{
    size_t fl = strlen(family);
    if (strncmp(name, family, fl) != 0)
        return 0;
    const char *rest = name + fl;
    if (strcmp(type, "histogram") == 0)
        return strcmp(rest, "_bucket") == 0 || strcmp(rest, "_sum") == 0 || strcmp(rest, "_count") == 0;
    return *rest == '\0';
}

static int count_of(const char *needle)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

Test(metrics, every_family_has_one_help_and_one_type_and_its_samples_follow_them)
{
    render();
    char *copy = strdup(text), *save = NULL;
    char family[128] = "", type[16] = "";
    int families = 0, samples = 0;
    for (char *line = strtok_r(copy, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
        char name[128];
        if (sscanf(line, "# HELP %127s", name) == 1) {
            char needle[160];
            snprintf(needle, sizeof(needle), "# HELP %s ", name);
            cr_assert_eq(count_of(needle), 1, "HELP of %s appears %d times", name, count_of(needle));
            snprintf(needle, sizeof(needle), "# TYPE %s ", name);
            cr_assert_eq(count_of(needle), 1, "TYPE of %s appears %d times", name, count_of(needle));
            line = strtok_r(NULL, "\n", &save);
            cr_assert(line != NULL && sscanf(line, "# TYPE %127s %15s", family, type) == 2 &&
                          strcmp(family, name) == 0,
                      "HELP %s is not followed by its TYPE: %s", name, line ? line : "(end)");
            cr_assert(strcmp(type, "counter") == 0 || strcmp(type, "gauge") == 0 || strcmp(type, "histogram") == 0,
                      "%s: type %s", name, type);
            families++;
            continue;
        }
        cr_assert_neq(line[0], '#', "a comment that is neither HELP nor TYPE: %s", line);
        sample s;
        char why[200];
        cr_assert_eq(parse_sample(line, &s, why, sizeof(why)), 0, "%s: %s", why, line);
        cr_assert(family[0] != '\0' && in_family(s.name, family, type), "%s outside its family (after %s %s)",
                  s.name, family, type);
        samples++;
    }
    free(copy);
    cr_assert_gt(families, 40, "%d families", families);
    cr_assert_gt(samples, families);
    cr_assert_eq(count_of("# HELP plugin_jobs_total "), 1, "two plugins' series share one family");
    cr_assert(strstr(text, "plugin_jobs_total{plugin=\"alpha\"} 3\n") != NULL, "%s", text);
    cr_assert(strstr(text, "plugin_jobs_total{plugin=\"beta\"} 5\n") != NULL);
    cr_assert(strstr(text, "weft_generation 7\n") != NULL);
    cr_assert(strstr(text, "# TYPE process_open_fds gauge\n") != NULL, "the standard process families");
}

Test(metrics, route_paths_are_escaped_in_every_route_family)
{
    render();
    static const char *const families[] = {"weft_requests_total", "weft_requests_cancelled_total",
                                           "weft_requests_refused_total", "weft_request_duration_seconds_bucket",
                                           "weft_route_policy_changes_total", "weft_route_policy"};
    static const char *const escaped[] = {"route=\"/q\\\"uote\"", "route=\"/back\\\\slash\"",
                                          "route=\"/new\\nline\""};
    for (size_t k = 0; k < sizeof(families) / sizeof(families[0]); k++)
        for (size_t e = 0; e < sizeof(escaped) / sizeof(escaped[0]); e++) {
            char needle[200];
            snprintf(needle, sizeof(needle), "\n%s{%s", families[k], escaped[e]);
            cr_assert(strstr(text, needle) != NULL, "no %s", needle + 1);
        }
    cr_assert(strstr(text, P_NEWLINE) == NULL && strstr(text, "=\"" P_QUOTE) == NULL, "a path went out unescaped");
    cr_assert(strstr(text, "weft_requests_total{route=\"/q\\\"uote\",policy=\"coroutine\",code=\"4xx\"} 1\n") != NULL,
              "%s", text);
    /* an auto route shows both policies it moves between, 1 for where it is now */
    cr_assert(strstr(text, "weft_route_policy{route=\"/new\\nline\",policy=\"coroutine\"} ") != NULL);
    cr_assert(strstr(text, "weft_route_policy{route=\"/new\\nline\",policy=\"pool\"} ") != NULL);
    cr_assert(strstr(text, "weft_route_policy_probes_total{route=\"/new\\nline\",outcome=\"passed\"} 0\n") != NULL);
    cr_assert(strstr(text, "weft_route_policy_probes_total{route=\"/plain\"") == NULL, "probes are auto routes' only");
}

Test(metrics, histograms_are_cumulative_and_end_in_inf_with_sum_and_count)
{
    render();
    char *copy = strdup(text), *save = NULL;
    char series[700] = "", family[128] = "";
    double last_le = -1, last = -1, inf = -1;
    int histograms = 0, bucket_rows = 0, counts = 0, sums = 0;
    for (char *line = strtok_r(copy, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
        sample s;
        char why[200];
        if (line[0] == '#' || parse_sample(line, &s, why, sizeof(why)) != 0)
            continue;
        size_t nl = strlen(s.name);
        if (nl > 7 && strcmp(s.name + nl - 7, "_bucket") == 0) {
            char key[700];
            snprintf(key, sizeof(key), "%.*s{%s}", (int)(nl - 7), s.name, s.labels);
            if (strcmp(key, series) != 0) {
                cr_assert(series[0] == '\0' || inf >= 0, "%s has no +Inf bucket", series);
                snprintf(series, sizeof(series), "%s", key);
                snprintf(family, sizeof(family), "%.*s", (int)(nl - 7), s.name);
                last_le = -1, last = -1, inf = -1;
                histograms++;
            }
            cr_assert_lt(inf, 0, "%s: a bucket after +Inf", series);
            double le = strcmp(s.le, "+Inf") == 0 ? 1.0 / 0.0 : atof(s.le);
            cr_assert(s.le[0] != '\0' && le > last_le, "%s: le=\"%s\" after %g", series, s.le, last_le);
            cr_assert_geq(s.value, last, "%s: le=\"%s\" holds %g, fewer than %g below it", series, s.le, s.value,
                          last);
            last_le = le, last = s.value, bucket_rows++;
            if (strcmp(s.le, "+Inf") == 0)
                inf = s.value;
            continue;
        }
        char want[700];
        snprintf(want, sizeof(want), "%s{%s}", family, s.labels);
        if (strncmp(s.name, family, strlen(family)) == 0 && strcmp(s.name + strlen(family), "_count") == 0 &&
            strcmp(want, series) == 0) {
            cr_assert_eq(s.value, inf, "%s: _count %g, +Inf %g", series, s.value, inf);
            counts++;
        }
        if (strncmp(s.name, family, strlen(family)) == 0 && strcmp(s.name + strlen(family), "_sum") == 0 &&
            strcmp(want, series) == 0)
            sums++;
    }
    free(copy);
    cr_assert_geq(histograms, 4, "one request-duration histogram per route: %d", histograms);
    cr_assert_gt(bucket_rows, histograms * 3);
    cr_assert_eq(counts, histograms, "every histogram has its _count after its buckets");
    cr_assert_eq(sums, histograms, "every histogram has its _sum after its buckets");
    /* the three requests of /q"uote: 0.3 ms, 20 ms, 2 s */
    const char *h = "weft_request_duration_seconds_bucket{route=\"/q\\\"uote\",policy=\"coroutine\",le=\"";
    char needle[200];
    static const struct {
        const char *le;
        int n;
    } want[] = {{"0.0005", 1}, {"0.01", 1}, {"0.025", 2}, {"1", 2}, {"2.5", 3}, {"+Inf", 3}};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        snprintf(needle, sizeof(needle), "%s%s\"} %d\n", h, want[i].le, want[i].n);
        cr_assert(strstr(text, needle) != NULL, "no %s", needle);
    }
    cr_assert(strstr(text, "weft_request_duration_seconds_count{route=\"/q\\\"uote\",policy=\"coroutine\"} 3\n"));
    cr_assert(strstr(text, "weft_request_duration_seconds_sum{route=\"/q\\\"uote\",policy=\"coroutine\"} 2.0203"),
              "the sum is the three durations");
}

Test(metrics, promtool_accepts_the_text)
{
    render();
    if (system("command -v promtool >/dev/null 2>&1") != 0)
        cr_skip_test("no promtool on PATH (Debian's prometheus package): the format is checked by this file's "
                     "parser only");
    char path[400], cmd[600];
    snprintf(path, sizeof(path), "%s/metrics.txt", wt_tmpdir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    cr_assert_eq(fclose(f), 0);
    snprintf(cmd, sizeof(cmd), "promtool check metrics < '%s' 2>&1", path);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    char out[4096];
    size_t n = fread(out, 1, sizeof(out) - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0 && n == 0, "promtool check metrics exited %d:\n%s",
              WEXITSTATUS(st), out);
}
