/* CORS in a real browser: headless Chromium (driven through chromedriver)
 * opens a page served from another origin (a second weft, its static route)
 * whose script fetches a route's JSON with credentials and a custom header
 * (a preflight), reads a Server-Sent Events stream and talks over a
 * WebSocket to weft, with compression on, and writes what it got into the
 * DOM; a route whose cors does not list the page's origin is refused by the
 * browser (fetch) and by weft (WebSocket). */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "devserver.h"
#include "harness.h"
#include "spawn.h"
#include "webdriver.h"

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

static const char page[] =
    "<!doctype html><html><head><meta charset=\"utf-8\"><title>cors</title></head><body>\n"
    "<div id=\"json\">pending</div><div id=\"sse\">pending</div><div id=\"ws\">pending</div>\n"
    "<div id=\"neg\">pending</div><div id=\"negws\">pending</div>\n"
    "<script>\n"
    "const base = 'http://127.0.0.1:%d', wsbase = 'ws://127.0.0.1:%d';\n"
    "const put = (id, t) => { document.getElementById(id).textContent = t; };\n"
    "fetch(base + '/api?size=25', {credentials: 'include', headers: {'X-Token': 't'}})\n"
    "  .then(r => r.json().then(j => put('json', 'ok ' + r.status + ' n=' + j.n +\n"
    "        ' id=' + (r.headers.get('x-request-id') ? 'exposed' : 'hidden'))))\n"
    "  .catch(e => put('json', 'failed ' + e));\n"
    "const es = new EventSource(base + '/events?count=3&interval_ms=10', {withCredentials: true});\n"
    "es.onmessage = e => { put('sse', 'ok n=' + JSON.parse(e.data).n + ' of ' + JSON.parse(e.data).of); es.close(); };\n"
    "es.onerror = () => put('sse', 'failed');\n"
    "const ws = new WebSocket(wsbase + '/chat');\n"
    "ws.onopen = () => ws.send('hello from the page');\n"
    "ws.onmessage = e => { put('ws', 'ok ' + e.data); ws.close(); };\n"
    "ws.onerror = () => put('ws', 'failed');\n"
    "fetch(base + '/closed?size=25').then(r => put('neg', 'readable ' + r.status))\n"
    "  .catch(e => put('neg', 'blocked ' + e.name));\n"
    "const bad = new WebSocket(wsbase + '/closed-chat');\n"
    "bad.onopen = () => put('negws', 'opened');\n"
    "bad.onerror = () => put('negws', 'blocked');\n"
    "</script></body></html>\n";

Test(cors_browser, a_page_on_another_origin_uses_json_sse_and_websocket, .timeout = 240)
{
    char chromium[512], driver_bin[512];
    cr_assert(in_path("chromium", chromium, sizeof(chromium)),
              "chromium is not installed: this test needs Debian's chromium and chromium-driver packages "
              "(packaging/install-deps.sh test)");
    cr_assert(in_path("chromedriver", driver_bin, sizeof(driver_bin)),
              "chromedriver is not installed: this test needs Debian's chromium-driver package");
    char tmp[256];
    wt_dev_tmpdir(tmp, sizeof(tmp));
    char site[300];
    snprintf(site, sizeof(site), "%s/site", tmp);
    cr_assert_eq(mkdir(site, 0700), 0);

    /* The page's origin first, weft's own static route on a port of its
     * own (another origin): the API's cors lists it. */
    wt_server page_srv = {0};
    wt_startf(&page_srv, "threads = 1; " WT_LISTEN "\nroutes = ( { path = \"/\"; static = { dir = \"%s\"; }; } );\n",
              site);
    int page_port = page_srv.port;

    wt_server srv = {0};
    wt_startf(&srv,
              "threads = 2; " WT_LISTEN "\n"
              "pools = ( { name = \"default\"; size = 4; queue = 100; } );\n"
              "compress = { min_size = 0; };\n"
              "routes = (\n"
              "  { path = \"/api\"; plugin = \"typed\"; dispatch = \"pool\"; cors = { origins = [\"http://127.0.0.1:%d\"];"
              " headers = [\"x-token\"]; expose = [\"x-request-id\"]; credentials = true; }; },\n"
              "  { path = \"/events\"; plugin = \"events\"; dispatch = \"coroutine\";"
              " cors = { origins = [\"http://127.0.0.1:%d\"]; credentials = true; }; },\n"
              "  { path = \"/chat\"; plugin = \"chat\"; dispatch = \"reactive\";"
              " cors = { origins = [\"http://127.0.0.1:%d\"]; }; },\n"
              "  { path = \"/closed\"; plugin = \"typed\"; dispatch = \"reactive\";"
              " cors = { origins = [\"https://elsewhere.example\"]; }; },\n"
              "  { path = \"/closed-chat\"; plugin = \"chat\"; dispatch = \"reactive\";"
              " cors = { origins = [\"https://elsewhere.example\"]; }; }\n"
              ");\n",
              page_port, page_port, page_port);

    char html[4096], index_path[320];
    snprintf(html, sizeof(html), page, srv.port, srv.port);
    snprintf(index_path, sizeof(index_path), "%s/index.html", site);
    wt_write_file_atomic(index_path, html);

    char home[320], cfg[340], cache[340], dlog[320];
    snprintf(home, sizeof(home), "HOME=%s/browser-home", tmp);
    snprintf(cfg, sizeof(cfg), "XDG_CONFIG_HOME=%s/browser-home/.config", tmp);
    snprintf(cache, sizeof(cache), "XDG_CACHE_HOME=%s/browser-home/.cache", tmp);
    mkdir(home + 5, 0700);
    const char *set[] = {home, cfg, cache, NULL};
    char **env = wt_dev_env(set);
    snprintf(dlog, sizeof(dlog), "%s/chromedriver.log", tmp);
    wt_wd d = {0};
    wt_wd_start(&d, driver_bin, env, dlog);
    free(env);
    char caps[2048];
    snprintf(caps, sizeof(caps),
             "{\"capabilities\":{\"alwaysMatch\":{\"browserName\":\"chrome\",\"goog:chromeOptions\":{"
             "\"binary\":\"%s\",\"args\":[\"--headless\",\"--no-sandbox\",\"--disable-gpu\","
             "\"--disable-dev-shm-usage\",\"--no-first-run\",\"--disable-background-networking\","
             "\"--disable-component-update\",\"--disable-sync\",\"--user-data-dir=%s/profile\"]}}}}",
             chromium, tmp);
    char *resp = wt_wd_cmd(&d, "POST", "/session", caps);
    char *session = wt_wd_string(resp, "sessionId");
    free(resp);
    char path[300], json[300];
    snprintf(path, sizeof(path), "/session/%s/url", session);
    snprintf(json, sizeof(json), "{\"url\":\"http://127.0.0.1:%d/index.html\"}", page_port);
    free(wt_wd_cmd(&d, "POST", path, json));

    /* Each element changes once its request is settled; a deadline turns "never" into a failure. */
    wt_wd_wait_text(&d, session, "#json", "ok 200 n=12345 id=exposed", 60000);
    wt_wd_wait_text(&d, session, "#sse", "ok n=1 of 3", 60000);
    wt_wd_wait_text(&d, session, "#ws", "ok hello from the page", 60000);
    wt_wd_wait_text(&d, session, "#neg", "blocked TypeError", 60000);
    wt_wd_wait_text(&d, session, "#negws", "blocked", 60000);
    snprintf(path, sizeof(path), "/session/%s", session);
    free(wt_wd_cmd(&d, "DELETE", path, NULL));
    free(session);
    wt_wd_stop(&d);
    wt_finish(&srv);
    wt_finish(&page_srv);
    wt_rm_rf(tmp);
}
