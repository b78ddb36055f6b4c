/*
 * The Dev UI of `weft dev` in headless Chromium: the rendered DOM, a
 * screenshot, a real click on the reload button, the "try it" box filled
 * and sent, and a screenshot of a route's chart under load whose pixels
 * show the line, all driven through chromedriver (support/webdriver.h).
 *
 * Artifacts (screenshots, the dumped DOM) go to <build>/artifacts/, derived
 * from WEFT_BIN (<build>/server/weft), or to $WEFT_TEST_ARTIFACTS.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "devserver.h"
#include "harness.h"
#include "spawn.h"
#include "webdriver.h"

static wt_server dev; /* `weft dev` */
static wt_wd driver;  /* chromedriver */
static char tmp[128]; /* the test's private directory */

static void setup(void)
{
    umask(022); /* the loader refuses group-writable plugins */
    wt_dev_tmpdir(tmp, sizeof(tmp));
}

static void teardown(void)
{
    wt_wd_stop(&driver);
    wt_stop_expect_0(&dev, "weft dev");
    wt_rm_rf(tmp);
}

TestSuite(devui, .init = setup, .fini = teardown, .timeout = 300);

static int in_path(const char *prog, char *out, size_t size)
{
    const char *path = getenv("PATH");
    char *copy = strdup(path != NULL ? path : "/usr/bin:/bin");
    int found = 0;
    char *save = NULL;
    for (char *d = strtok_r(copy, ":", &save); d != NULL && !found; d = strtok_r(NULL, ":", &save)) {
        snprintf(out, size, "%s/%s", d, prog);
        found = access(out, X_OK) == 0;
    }
    free(copy);
    return found;
}

static void artifact_path(const char *name, char *out, size_t size)
{
    char dir[512];
    const char *env = getenv("WEFT_TEST_ARTIFACTS");
    if (env != NULL && *env) {
        snprintf(dir, sizeof(dir), "%s", env);
    } else {
        /* WEFT_BIN is <build>/server/weft */
        snprintf(dir, sizeof(dir), "%s", WEFT_BIN);
        for (int i = 0; i < 2; i++) {
            char *slash = strrchr(dir, '/');
            cr_assert_not_null(slash, "cannot derive the build directory from %s", WEFT_BIN);
            *slash = '\0';
        }
        strcat(dir, "/artifacts");
    }
    cr_assert(mkdir(dir, 0755) == 0 || errno == EEXIST, "mkdir %s: %s", dir, strerror(errno));
    snprintf(out, size, "%s/%s", dir, name);
}

/* Chromium writes its profile, cache and crash data under tmp, never in $HOME. */
static const char *const *browser_env(void)
{
    static char home[200], cfg[220], cache[220];
    static const char *set[4];
    snprintf(home, sizeof(home), "HOME=%s/browser-home", tmp);
    snprintf(cfg, sizeof(cfg), "XDG_CONFIG_HOME=%s/browser-home/.config", tmp);
    snprintf(cache, sizeof(cache), "XDG_CACHE_HOME=%s/browser-home/.cache", tmp);
    char dir[200];
    snprintf(dir, sizeof(dir), "%s/browser-home", tmp);
    mkdir(dir, 0700);
    set[0] = home;
    set[1] = cfg;
    set[2] = cache;
    set[3] = NULL;
    return set;
}

#define CHROMIUM_FLAGS                                                                                                \
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",                       \
        "--disable-background-networking", "--disable-component-update", "--disable-sync"

/* Checks the PNG signature and that IHDR says width x height (height 0: any). */
static void assert_png(const char *path, unsigned width, unsigned height)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "no screenshot at %s", path);
    unsigned char h[24];
    size_t n = fread(h, 1, sizeof(h), f);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fclose(f);
    cr_assert_eq(n, sizeof(h), "%s is truncated", path);
    cr_assert(memcmp(h, "\x89PNG\r\n\x1a\n", 8) == 0 && memcmp(h + 12, "IHDR", 4) == 0, "%s is not a PNG", path);
    unsigned w = (unsigned)h[16] << 24 | (unsigned)h[17] << 16 | (unsigned)h[18] << 8 | h[19];
    unsigned hh = (unsigned)h[20] << 24 | (unsigned)h[21] << 16 | (unsigned)h[22] << 8 | h[23];
    cr_assert(w == width && (height == 0 ? hh >= 300 : hh == height), "%s is %ux%u, want %ux%u", path, w, hh, width,
              height);
    cr_assert_gt(size, 5000, "%s is %ld bytes: a blank page?", path, size);
}

/* Rows of the chart image (a PNG file) holding pixels of the rate line's
 * colour (#1565c0 over #fafafa, antialiased: clearly bluer than grey);
 * rows[y] is set for each. Returns the image height. */
static unsigned line_rows(const char *path, unsigned char *rows, unsigned max_rows, unsigned *width)
{
    png_image img;
    memset(&img, 0, sizeof(img));
    img.version = PNG_IMAGE_VERSION;
    cr_assert(png_image_begin_read_from_file(&img, path), "%s: %s", path, img.message);
    img.format = PNG_FORMAT_RGB;
    size_t size = PNG_IMAGE_SIZE(img);
    unsigned char *px = malloc(size);
    cr_assert_not_null(px);
    cr_assert(png_image_finish_read(&img, NULL, px, 0, NULL), "%s: %s", path, img.message);
    cr_assert(img.height <= max_rows, "%s: %u rows", path, img.height);
    memset(rows, 0, max_rows);
    for (unsigned y = 0; y < img.height; y++)
        for (unsigned x = 0; x < img.width; x++) {
            const unsigned char *p = px + 3 * ((size_t)y * img.width + x);
            if (p[2] > p[0] + 60 && p[2] > 120)
                rows[y] = 1;
        }
    free(px);
    *width = img.width;
    return img.height;
}

/* The "try it" box as a script would use it: the relay's answers and refusals. */
static void try_relay_directly(void)
{
    wt_server admin = dev;
    admin.port = dev.admin_port;
    wt_resp r;
    cr_assert_eq(wt_http_typed(&admin, "POST", "/dev/try", "application/json",
                               "{\"method\":\"POST\",\"path\":\"/devui\",\"body\":\"x\"}", &r),
                 0);
    cr_assert_eq(r.status, 200, "%s", r.body);
    cr_assert(strstr(r.body, "\"status\":405") != NULL, "the route's own 405 comes back: %s", r.body);
    cr_assert(strstr(r.body, "[\"allow\",\"GET") != NULL, "with its Allow header: %s", r.body);
    wt_resp_free(&r);
    cr_assert_eq(wt_http_typed(&admin, "POST", "/dev/try", "application/json", "{\"path\":\"devui\"}", &r), 0);
    cr_assert(r.status == 400 && strstr(r.body, "must start with /") != NULL, "%ld %s", r.status, r.body);
    wt_resp_free(&r);
    cr_assert_eq(wt_http_typed(&admin, "POST", "/dev/try", "application/json",
                               "{\"path\":\"/devui\",\"headers\":{\"a\":\"b\"}}", &r),
                 0);
    cr_assert(r.status == 400 && strstr(r.body, "headers must be") != NULL, "%ld %s", r.status, r.body);
    wt_resp_free(&r);
    cr_assert_eq(wt_http_typed(&admin, "POST", "/dev/try", "application/json", "not json", &r), 0);
    cr_assert_eq(r.status, 400, "%s", r.body);
    wt_resp_free(&r);
    cr_assert_eq(wt_http_typed(&admin, "POST", "/dev/try", "application/json",
                               "{\"path\":\"/devui\",\"method\":\"GE T\"}", &r),
                 0);
    cr_assert(r.status == 400 && strstr(r.body, "not an HTTP token") != NULL, "%ld %s", r.status, r.body);
    wt_resp_free(&r);
    cr_assert_eq(wt_http(&admin, "GET", "/dev/try", NULL, &r), 0);
    cr_assert_eq(r.status, 405, "%s", r.body);
    wt_resp_free(&r);
    /* A cross-site page may not make the server send requests. */
    const char *const cross[] = {"Origin: http://evil.example", "Content-Type: application/json", NULL};
    cr_assert_eq(wt_http_headers(&admin, "POST", "/dev/try", cross, "{\"path\":\"/devui\"}", &r), 0);
    cr_assert_eq(r.status, 403, "%s", r.body);
    wt_resp_free(&r);
}

Test(devui, dev_ui_renders_and_its_reload_button_works_in_chromium)
{
    char chromium[512], driver_bin[512];
    cr_assert(in_path("chromium", chromium, sizeof(chromium)),
              "chromium is not installed (not in PATH): this test needs Debian's chromium and chromium-driver "
              "packages (packaging/install-deps.sh test)");
    cr_assert(in_path("chromedriver", driver_bin, sizeof(driver_bin)),
              "chromedriver is not installed (not in PATH): this test needs Debian's chromium-driver package "
              "(packaging/install-deps.sh test)");
    wt_dev_project("devui", tmp);
    wt_dev_start(&dev, tmp, tmp, NULL);
    wt_resp r;
    wt_get(&dev, "/devui", &r); /* something for the stats */
    cr_assert_eq(r.status, 200);
    wt_resp_free(&r);

    char url[128], profile[300], dom_path[300];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/dev", dev.admin_port);

    /* 1. the rendered DOM has the routes table with the plugin's routes */
    snprintf(profile, sizeof(profile), "--user-data-dir=%s/profile-dom", tmp);
    snprintf(dom_path, sizeof(dom_path), "%s/dom.html", tmp);
    const char *dump[] = {chromium, CHROMIUM_FLAGS, profile, "--dump-dom", url, NULL};
    char blog[300];
    snprintf(blog, sizeof(blog), "%s/chromium.log", tmp);
    int timed_out;
    char **env = wt_dev_env(browser_env());
    int rc = wt_wait(wt_spawn(chromium, dump, env, dom_path, blog, WT_SPAWN_GROUP), 120000, WT_SPAWN_GROUP,
                     &timed_out);
    char *dom = wt_read_file(dom_path);
    char *blog_text = wt_read_file(blog);
    cr_assert(!timed_out && rc == 0, "chromium --dump-dom: exit %d%s:\n%s", rc, timed_out ? " (timed out)" : "",
              blog_text);
    free(blog_text);
    cr_assert_not_null(dom);
    char art[600];
    artifact_path("devui.html", art, sizeof(art));
    wt_write_file_atomic(art, dom);
    const char *table = strstr(dom, "<table id=\"routes\">");
    cr_assert_not_null(table, "no routes table in the DOM:\n%s", dom);
    const char *end = strstr(table, "</table>");
    cr_assert_not_null(end);
    char *routes = strndup(table, (size_t)(end - table));
    cr_assert(strstr(routes, "<td>/devui</td><td>devui</td>") != NULL, "the route /devui is listed:\n%s", routes);
    cr_assert(strstr(routes, "<td>/devui/reactive</td><td>devui</td>") != NULL, "and /devui/reactive:\n%s", routes);
    cr_assert(strstr(routes, "<td class=\"policy\">coroutine</td>") != NULL &&
                  strstr(routes, "<td class=\"policy\">reactive</td>") != NULL,
              "with their policies:\n%s", routes);
    free(routes);
    cr_assert(strstr(dom, "<button id=\"reload\"") != NULL, "a reload button:\n%s", dom);
    free(dom);

    /* 2. a screenshot, kept as an artifact */
    char shot[600], shot_arg[700];
    artifact_path("devui.png", shot, sizeof(shot));
    unlink(shot);
    snprintf(shot_arg, sizeof(shot_arg), "--screenshot=%s", shot);
    snprintf(profile, sizeof(profile), "--user-data-dir=%s/profile-shot", tmp);
    const char *snap[] = {chromium, CHROMIUM_FLAGS, profile, shot_arg, "--window-size=1200,900", url, NULL};
    rc = wt_wait(wt_spawn(chromium, snap, env, NULL, blog, WT_SPAWN_GROUP), 120000, WT_SPAWN_GROUP, &timed_out);
    blog_text = wt_read_file(blog);
    cr_assert(!timed_out && rc == 0, "chromium --screenshot: exit %d%s:\n%s", rc, timed_out ? " (timed out)" : "",
              blog_text);
    free(blog_text);
    assert_png(shot, 1200, 900);
    cr_log_info("Dev UI screenshot: %s", shot);

    /* 3. click the reload button in a real browser, through WebDriver */
    char dlog[300];
    snprintf(dlog, sizeof(dlog), "%s/chromedriver.log", tmp);
    wt_wd_start(&driver, driver_bin, env, dlog);
    free(env);
    char caps[2048];
    snprintf(caps, sizeof(caps),
             "{\"capabilities\":{\"alwaysMatch\":{\"browserName\":\"chrome\",\"goog:chromeOptions\":{"
             "\"binary\":\"%s\",\"args\":[\"--headless\",\"--no-sandbox\",\"--disable-gpu\","
             "\"--disable-dev-shm-usage\",\"--no-first-run\",\"--disable-background-networking\","
             "\"--disable-component-update\",\"--disable-sync\",\"--window-size=1200,900\","
             "\"--user-data-dir=%s/profile-wd\"]}}}}",
             chromium, tmp);
    char *resp = wt_wd_cmd(&driver, "POST", "/session", caps);
    char *session = wt_wd_string(resp, "sessionId");
    free(resp);
    char path[300], json[300];
    snprintf(path, sizeof(path), "/session/%s/url", session);
    snprintf(json, sizeof(json), "{\"url\":\"%s\"}", url);
    free(wt_wd_cmd(&driver, "POST", path, json));

    char *st = wt_admin_get(&dev, "/status");
    long before = wt_reloads_ok(st);
    free(st);
    char *button = wt_wd_find(&driver, session, "#reload");
    snprintf(path, sizeof(path), "/session/%s/element/%s/click", session, button);
    free(button);
    free(wt_wd_cmd(&driver, "POST", path, "{}"));
    wt_wd_wait_text(&driver, session, "#reload-status", "reload requested", 30000);

    /* the click reached the server: a reload ran, and the page's poller shows its outcome */
    double t0 = wt_now_ms();
    long after = before;
    while (after <= before && wt_now_ms() - t0 < 15000) {
        st = wt_admin_get(&dev, "/status");
        after = wt_reloads_ok(st);
        free(st);
        if (after <= before)
            usleep(100000);
    }
    cr_assert_gt(after, before, "reloads.ok went from %ld to %ld after the click", before, after);
    st = wt_admin_get(&dev, "/status");
    cr_assert(strstr(st, "(admin /reload)") != NULL, "the reload came through admin /reload:\n%s", st);
    free(st);
    wt_wd_wait_text(&driver, session, "#last-reload", "ok: ", 30000);

    artifact_path("devui-after-reload.png", shot, sizeof(shot));
    wt_wd_screenshot(&driver, session, shot);
    assert_png(shot, 1200, 0); /* the viewport: the window less what headless Chromium reserves */

    /* 4. the "try it" box: pick the route, add a query, send; the answer shows */
    wt_wd_click(&driver, session, "#try-route option[value='/devui']");
    wt_wd_type(&driver, session, "#try-query", "from=browser");
    wt_wd_click(&driver, session, "#try-send");
    wt_wd_wait_text(&driver, session, "#try-status", "200", 30000);
    char *text = wt_wd_text(&driver, session, "#try-response-body");
    cr_assert_str_eq(text, "Hello from devui", "the route's body is shown");
    free(text);
    text = wt_wd_text(&driver, session, "#try-response-headers");
    cr_assert(strstr(text, "content-type: text/plain") != NULL, "and its headers: %s", text);
    free(text);
    artifact_path("devui-try.png", shot, sizeof(shot));
    wt_wd_screenshot(&driver, session, shot);
    try_relay_directly();

    /* 5. under load, the rate chart draws a line that rises from the idle baseline */
    const char *const load_paths[] = {"/devui", "/devui/reactive"};
    wt_load *load = wt_load_start(&dev, 2, load_paths, 2);
    const char *chart = "#routes tr[data-slot] canvas.rate-chart";
    double peak = 0;
    for (double t1 = wt_now_ms(); peak <= 1 && wt_now_ms() - t1 < 60000;) {
        char *max = wt_wd_attribute(&driver, session, chart, "data-max");
        peak = atof(max);
        free(max);
        if (peak <= 1)
            usleep(200000);
    }
    long ok, failed;
    char last[256];
    wt_load_stop(load, &ok, &failed, last, sizeof(last));
    cr_assert_eq(failed, 0, "%ld of the load's requests failed: %s", failed, last);
    cr_assert_gt(peak, 1, "the chart's scale (data-max) stayed at %g req/s under load (%ld requests)", peak, ok);
    artifact_path("devui-chart.png", shot, sizeof(shot));
    wt_wd_element_screenshot(&driver, session, chart, shot);
    unsigned char rows[256];
    unsigned width = 0, height = line_rows(shot, rows, sizeof(rows), &width);
    cr_assert(width >= 150 && height >= 24, "the chart's screenshot %s is %ux%u", shot, width, height);
    int top = 0, bottom = 0;
    for (unsigned y = 0; y < height; y++) {
        top |= rows[y] && y < height / 3;
        bottom |= rows[y] && y >= height * 2 / 3;
    }
    cr_assert(top && bottom,
              "the rate line (#1565c0) should reach the top third of %s (under load) and the bottom third (idle "
              "before it): top %d, bottom %d",
              shot, top, bottom);
    cr_log_info("Dev UI chart screenshot: %s", shot);

    snprintf(path, sizeof(path), "/session/%s", session);
    free(wt_wd_cmd(&driver, "DELETE", path, NULL));
    free(session);

    int code = wt_stop(&dev);
    char *log = wt_read_log(&dev);
    cr_assert_eq(code, 0, "weft dev exited %d on SIGTERM:\n%s", code, log);
    free(log);
}
