#include "webdriver.h"

#include <criterion/criterion.h>
#include <curl/curl.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "spawn.h"

/* chromedriver's own --port=0 binds IPv6 on a kernel-chosen port and then
 * IPv4 on the same number, which another test's 127.0.0.1:0 listener may
 * already hold ("IPv4 port not available. Exiting..."). A port below the
 * ephemeral range is one nobody takes by asking for port 0; a start that
 * still loses its port to a race is tried again on another. */
static int wd_try_start(wt_wd *d, const char *driver, char *const *env, const char *log)
{
    char port_arg[32];
    snprintf(port_arg, sizeof(port_arg), "--port=%d", wt_free_port());
    const char *argv[] = {driver, port_arg, NULL};
    d->port = 0;
    d->pid = wt_spawn(driver, argv, env, NULL, log, WT_SPAWN_GROUP | WT_SPAWN_TRUNCATE);
    double deadline = wt_now_ms() + 30000;
    while (wt_now_ms() < deadline) {
        char *text = wt_read_file(log);
        const char *p = text != NULL ? strstr(text, "started successfully on port ") : NULL;
        if (p != NULL)
            d->port = atoi(p + strlen("started successfully on port "));
        free(text);
        if (d->port > 0)
            return 1;
        int status;
        if (waitpid(d->pid, &status, WNOHANG) == d->pid) {
            d->pid = 0;
            char *l = wt_read_file(log);
            int lost_port = l != NULL && strstr(l, "Address already in use") != NULL;
            if (lost_port) {
                free(l);
                return 0;
            }
            cr_assert_fail("chromedriver exited (status %d):\n%s", status, l);
        }
        usleep(50000);
    }
    char *l = wt_read_file(log);
    cr_assert_fail("chromedriver did not start within 30 s:\n%s", l);
    return 0;
}

void wt_wd_start(wt_wd *d, const char *driver, char *const *env, const char *log)
{
    for (int attempt = 0; attempt < 5; attempt++)
        if (wd_try_start(d, driver, env, log))
            return;
    char *l = wt_read_file(log);
    cr_assert_fail("chromedriver found its port taken 5 times:\n%s", l);
}

void wt_wd_stop(wt_wd *d)
{
    if (d->pid <= 0)
        return;
    kill(-d->pid, SIGTERM);
    int timed_out;
    wt_wait(d->pid, 5000, WT_SPAWN_GROUP, &timed_out);
    d->pid = 0;
}

char *wt_wd_cmd(const wt_wd *d, const char *method, const char *path, const char *json)
{
    char url[512];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", d->port, path);
    CURL *c = curl_easy_init();
    wt_buf b = {0};
    struct curl_slist *hdr = curl_slist_append(NULL, "Content-Type: application/json");
    hdr = curl_slist_append(hdr, "Expect:");
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, wt_curl_sink);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 120L); /* a new session starts a browser */
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (json != NULL)
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, json);
    CURLcode rc = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(hdr);
    curl_easy_cleanup(c);
    char *body = b.data != NULL ? b.data : strdup("");
    cr_assert_eq(rc, CURLE_OK, "WebDriver %s %s: %s", method, path, curl_easy_strerror(rc));
    cr_assert_eq(status, 200, "WebDriver %s %s: HTTP %ld %.2000s", method, path, status, body);
    return body;
}

char *wt_wd_string(const char *json, const char *key)
{
    char k[128];
    snprintf(k, sizeof(k), "\"%s\":\"", key);
    const char *p = strstr(json, k);
    cr_assert_not_null(p, "no %s in WebDriver response %.2000s", key, json);
    p += strlen(k);
    const char *end = strchr(p, '"');
    cr_assert_not_null(end);
    return strndup(p, (size_t)(end - p));
}

#define WD_ELEMENT "element-6066-11e4-a52e-4f735466cecf"

char *wt_wd_find(const wt_wd *d, const char *session, const char *css)
{
    char path[256], json[256];
    snprintf(path, sizeof(path), "/session/%s/element", session);
    snprintf(json, sizeof(json), "{\"using\":\"css selector\",\"value\":\"%s\"}", css);
    char *resp = wt_wd_cmd(d, "POST", path, json);
    char *id = wt_wd_string(resp, WD_ELEMENT);
    free(resp);
    return id;
}

char *wt_wd_text(const wt_wd *d, const char *session, const char *css)
{
    char *id = wt_wd_find(d, session, css);
    char path[512];
    snprintf(path, sizeof(path), "/session/%s/element/%s/text", session, id);
    free(id);
    char *resp = wt_wd_cmd(d, "GET", path, NULL);
    char *text = wt_wd_string(resp, "value");
    free(resp);
    return text;
}

void wt_wd_wait_text(const wt_wd *d, const char *session, const char *css, const char *want, double limit_ms)
{
    double t0 = wt_now_ms();
    char *text = NULL;
    while (wt_now_ms() - t0 < limit_ms) {
        free(text);
        text = wt_wd_text(d, session, css);
        if (strncmp(text, want, strlen(want)) == 0) {
            free(text);
            return;
        }
        usleep(100000);
    }
    cr_assert_fail("%s never read '%s' within %.0f ms (last: '%s')", css, want, limit_ms, text);
}

static int b64(char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
}

static void write_base64(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "%s: %s", path, strerror(errno));
    uint32_t acc = 0;
    int bits = 0;
    for (const char *p = text; *p && *p != '='; p++) {
        int v = b64(*p);
        if (v < 0)
            continue;
        acc = acc << 6 | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            fputc((int)((acc >> bits) & 0xff), f);
        }
    }
    fclose(f);
}

/* GET `cmd` answers {"value": "<base64 PNG>"}; the PNG goes to `path`. */
static void save_png(const wt_wd *d, const char *cmd, const char *path)
{
    char *resp = wt_wd_cmd(d, "GET", cmd, NULL);
    char *png = wt_wd_string(resp, "value");
    free(resp);
    write_base64(path, png);
    free(png);
}

void wt_wd_screenshot(const wt_wd *d, const char *session, const char *path)
{
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "/session/%s/screenshot", session);
    save_png(d, cmd, path);
}

/* /session/S/element/ID + `tail`, for the element matching `css`. */
static void element_path(const wt_wd *d, const char *session, const char *css, const char *tail, char *out,
                         size_t size)
{
    char *id = wt_wd_find(d, session, css);
    snprintf(out, size, "/session/%s/element/%s%s", session, id, tail);
    free(id);
}

void wt_wd_element_screenshot(const wt_wd *d, const char *session, const char *css, const char *path)
{
    char cmd[512];
    element_path(d, session, css, "/screenshot", cmd, sizeof(cmd));
    save_png(d, cmd, path);
}

void wt_wd_click(const wt_wd *d, const char *session, const char *css)
{
    char cmd[512];
    element_path(d, session, css, "/click", cmd, sizeof(cmd));
    free(wt_wd_cmd(d, "POST", cmd, "{}"));
}

void wt_wd_type(const wt_wd *d, const char *session, const char *css, const char *text)
{
    cr_assert(strpbrk(text, "\"\\") == NULL, "wt_wd_type: no quotes or backslashes: %s", text);
    char cmd[512], json[1024];
    element_path(d, session, css, "/clear", cmd, sizeof(cmd));
    free(wt_wd_cmd(d, "POST", cmd, "{}"));
    element_path(d, session, css, "/value", cmd, sizeof(cmd));
    snprintf(json, sizeof(json), "{\"text\":\"%s\"}", text);
    free(wt_wd_cmd(d, "POST", cmd, json));
}

char *wt_wd_attribute(const wt_wd *d, const char *session, const char *css, const char *name)
{
    char cmd[512], tail[160];
    snprintf(tail, sizeof(tail), "/attribute/%s", name);
    element_path(d, session, css, tail, cmd, sizeof(cmd));
    char *resp = wt_wd_cmd(d, "GET", cmd, NULL);
    /* {"value":null} when absent */
    char *v = strstr(resp, "\"value\":\"") != NULL ? wt_wd_string(resp, "value") : strdup("");
    free(resp);
    return v;
}
