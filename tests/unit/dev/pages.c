/*
 * Tests for server/dev/pages.c: the Dev UI page (weft_dev_page_html) of a
 * generation whose route paths, option values and config file path are
 * hostile HTML, with a project whose compiler and test output are too. Every
 * one must come out escaped wherever the page shows it (tables, the try-it
 * box's attributes), and the page's own script must stay its only one.
 * Plugin names reach the page only once they are valid names
 * ([a-z0-9_-]), so they cannot carry markup.
 */
#include "dev/dev.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dev/project.h"
#include "harness.h"
#include "plugin/module.h"
#include "reload/generation.h"
#include "unit.h"

static weft_generation *gen;
static char *html;
static char confdir[400];

static void setup(void)
{
    unsetenv("WEFT_PLUGIN_PATH");
    wt_unit_setup("devpages");
}

static void teardown(void)
{
    free(html);
    html = NULL;
    if (gen != NULL)
        weft_generation_release(gen);
    gen = NULL;
    weft_dev_projects_free();
    weft_module_cleanup();
    wt_unit_teardown();
}

TestSuite(devpages, .init = setup, .fini = teardown, .timeout = 60);

/* As libconfig reads them from the file below. */
#define P_SCRIPT "/<script>alert(1)</script>"
#define P_ATTR "/a\"onmouseover=\"x"
#define P_AMP "/fish&chips"
#define OPT_TD "</td><script>x()</script>"
#define DIR_NAME "<b>&\""
#define BUILD_OUT "probe.c:1: error: </pre><script>y()</script>"
#define TEST_OUT "[FAIL] probe::x </pre><img src=x onerror=z()>"

/* A project "probe" whose last build and test run failed with hostile output. */
static void hostile_project(void)
{
    weft_dev_dirs d = {0};
    snprintf(d.root, sizeof(d.root), "%s", wt_tmpdir);
    char path[600];
    snprintf(path, sizeof(path), "%s/probe", wt_tmpdir);
    cr_assert_eq(mkdir(path, 0755), 0);
    snprintf(path, sizeof(path), "%s/probe/probe.c", wt_tmpdir);
    wt_write_file_atomic(path, "/* never built */\n");
    cr_assert_eq(weft_dev_scan(&d), 0);
    weft_dev_lock();
    weft_dev_project *p = weft_dev_project_at(0);
    p->failed = 1;
    p->output = strdup(BUILD_OUT);
    p->test_state = WEFT_DEV_TESTS_FAILED;
    snprintf(p->test_summary, sizeof(p->test_summary), "<i>0 passed</i>");
    p->test_output = strdup(TEST_OUT);
    weft_dev_unlock();
}

static void render(void)
{
    snprintf(confdir, sizeof(confdir), "%s/" DIR_NAME, wt_tmpdir);
    cr_assert_eq(mkdir(confdir, 0755), 0);
    char path[600];
    snprintf(path, sizeof(path), "%s/weft.conf", confdir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fprintf(f,
            "plugin_dirs = [ \"%s\" ];\n"
            "routes = (\n"
            "  { path = \"/<script>alert(1)</script>\"; plugin = \"echo\"; dispatch = \"reactive\";\n"
            "    options = { prefix = \"</td><script>x()</script>\"; }; },\n"
            "  { path = \"/a\\\"onmouseover=\\\"x\"; plugin = \"echo\"; dispatch = \"coroutine\"; },\n"
            "  { path = \"/fish&chips\"; plugin = \"echo\"; dispatch = \"reactive\"; }\n"
            ");\n",
            WEFT_FIXTURE_DIR);
    cr_assert_eq(fclose(f), 0);
    weft_config *cfg = weft_config_load(path, &wt_errs);
    cr_assert_not_null(cfg, "config refused:%s", wt_errs_text(&wt_errs));
    gen = weft_generation_build(cfg, 3, 1, &wt_errs);
    cr_assert_not_null(gen, "generation refused:%s", wt_errs_text(&wt_errs));
    cr_assert_str_eq(gen->routes[1].cfg->path, P_ATTR, "libconfig read the path this test means");
    hostile_project();
    size_t len = 0;
    html = weft_dev_page_html(gen, &len);
    cr_assert_not_null(html);
    cr_assert_eq(strlen(html), len);
}

static int count_of(const char *needle)
{
    int n = 0;
    for (const char *p = html; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

#define has(s) cr_assert(strstr(html, s) != NULL, "the page lacks %s", s)

Test(devpages, no_hostile_text_reaches_the_page_as_markup)
{
    render();
    static const char *const raw[] = {P_SCRIPT, P_ATTR, P_AMP, OPT_TD, DIR_NAME, BUILD_OUT, TEST_OUT,
                                      "<i>0 passed", "<img", "onmouseover=\"", "alert(1)</"};
    for (size_t i = 0; i < sizeof(raw) / sizeof(raw[0]); i++)
        cr_assert_null(strstr(html, raw[i]), "'%s' is on the page unescaped", raw[i]);
    cr_assert_eq(count_of("<script"), 1, "the page's own script only: %d", count_of("<script"));
    cr_assert_eq(count_of("</script>"), 1);
    cr_assert_eq(count_of("</pre>"), count_of("<pre"), "every <pre> closes once, none closed early");
    cr_assert_eq(count_of("<td"), count_of("</td>"), "no cell closed by a value");
}

Test(devpages, route_paths_are_escaped_in_every_table_and_attribute)
{
    render();
    const char *script = "/&lt;script&gt;alert(1)&lt;/script&gt;";
    const char *attr = "/a&quot;onmouseover=&quot;x";
    char needle[300];
    /* routes table and configuration table: a cell each */
    snprintf(needle, sizeof(needle), "<td>%s</td><td>echo</td>", script);
    cr_assert_eq(count_of(needle), 2, "%s", needle);
    snprintf(needle, sizeof(needle), "<td>%s</td><td>echo</td>", attr);
    cr_assert_eq(count_of(needle), 2, "%s", needle);
    cr_assert_eq(count_of("<td>/fish&amp;chips</td>"), 2);
    /* the try-it box: the value attribute and the option's text */
    snprintf(needle, sizeof(needle), "<option value=\"%s\" data-methods=", attr);
    has(needle);
    snprintf(needle, sizeof(needle), "<option value=\"%s\" data-methods=", script);
    has(needle);
    snprintf(needle, sizeof(needle), " %s (echo)</option>", attr);
    has(needle);
}

Test(devpages, option_values_and_the_config_path_are_escaped)
{
    render();
    has("<td class=\"options\">prefix = \"&lt;/td&gt;&lt;script&gt;x()&lt;/script&gt;\"</td>");
    char needle[600];
    snprintf(needle, sizeof(needle), "config <code>%s/&lt;b&gt;&amp;&quot;/weft.conf</code>", wt_tmpdir);
    has(needle);
    /* "from": the file and line of each route */
    snprintf(needle, sizeof(needle), "<td>%s/&lt;b&gt;&amp;&quot;/weft.conf:3</td>", wt_tmpdir);
    has(needle);
    has("generation <span id=\"generation\">3</span>");
}

Test(devpages, build_and_test_output_is_escaped_in_its_pre)
{
    render();
    has("<pre>probe.c:1: error: &lt;/pre&gt;&lt;script&gt;y()&lt;/script&gt;</pre>");
    has("<pre class=\"failures\">[FAIL] probe::x &lt;/pre&gt;&lt;img src=x onerror=z()&gt;</pre>");
    has("<span class=\"text\">&lt;i&gt;0 passed&lt;/i&gt;</span>");
    has("<tr data-project=\"probe\"><td>probe</td>");
    has("<td class=\"fail\">failed");
}
