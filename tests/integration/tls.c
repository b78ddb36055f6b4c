/* TLS listeners: HTTPS over HTTP/1.1 and HTTP/2 (ALPN), key checks,
 * certificate rotation on reload, the default TLS 1.2 suites. Certificates are made here, never committed. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

static wt_server srv;
static int tls_port, cbc_port; /* the default TLS listener; one with tls.ciphers naming a CBC suite */

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
    char cmd[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    return system(cmd);
}

/* Output of a shell command (first 4 KiB). */
static char *capture(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *capture(const char *fmt, ...)
{
    char cmd[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    FILE *p = popen(cmd, "r");
    char *buf = calloc(1, 4096);
    size_t n = fread(buf, 1, 4095, p);
    buf[n] = '\0';
    pclose(p);
    return buf;
}

/* A self-signed certificate with a given serial, installed by rename. */
static void make_cert(const char *dir, const char *name, int serial)
{
    cr_assert_eq(sh("cd %s && openssl req -x509 -newkey rsa:2048 -nodes -keyout .k.pem -out .c.pem -days 2 "
                    "-subj /CN=localhost -set_serial %d >/dev/null 2>&1 && mv .k.pem %s.key && mv .c.pem %s.crt",
                    dir, serial, name, name),
                 0);
}

static void setup(void)
{
    wt_write_conf(&srv, "# placeholder\n");
    make_cert(srv.dir, "server", 1001);
    char conf[1024];
    snprintf(conf, sizeof(conf),
             "threads = 2; admin = false;\n"
             "listen = ( \"127.0.0.1:0\", { address = \"127.0.0.1:0\"; tls = { certificate = \"server.crt\"; key = "
             "\"server.key\"; }; },\n"
             "  { address = \"127.0.0.1:0\"; tls = { certificate = \"server.crt\"; key = \"server.key\";\n"
             "    ciphers = \"ECDHE-RSA-AES128-SHA:ECDHE-RSA-AES128-GCM-SHA256\"; }; } );\n"
             "routes = (" WT_HELLO_ROUTE ",\n"
             "          { path = \"/slow\"; plugin = \"delay\"; dispatch = \"coroutine\"; options = { ms = 1500; }; });\n");
    wt_start(&srv, conf);
    char *log = wt_read_log(&srv);
    const char *p = strstr(log, "listening on https://127.0.0.1:");
    cr_assert_not_null(p, "%s", log);
    tls_port = atoi(p + strlen("listening on https://127.0.0.1:"));
    p = strstr(p + 1, "listening on https://127.0.0.1:");
    cr_assert_not_null(p, "%s", log);
    cbc_port = atoi(p + strlen("listening on https://127.0.0.1:"));
    free(log);
}

static void teardown(void) { wt_suite_stop(&srv); }

TestSuite(tls, .init = setup, .fini = teardown, .timeout = 120);

Test(tls, https_over_http1_and_http2)
{
    char *out = capture("curl -sk --http1.1 https://127.0.0.1:%d/hello", tls_port);
    cr_assert_str_eq(out, "hello");
    free(out);
    out = capture("curl -sk -v --http2 https://127.0.0.1:%d/hello 2>&1", tls_port);
    cr_assert(strstr(out, "ALPN: server accepted h2") != NULL, "ALPN must pick h2:\n%s", out);
    cr_assert(strstr(out, "HTTP/2 200") != NULL, "%s", out);
    cr_assert(strstr(out, "\nhello") != NULL || strstr(out, "hello") != NULL, "%s", out);
    free(out);
    /* cleartext keeps HTTP/1.1 and HTTP/2 with prior knowledge */
    out = capture("curl -s -v --http2-prior-knowledge http://127.0.0.1:%d/hello 2>&1", srv.port);
    cr_assert(strstr(out, "HTTP/2 200") != NULL, "%s", out);
    free(out);
    wt_finish(&srv);
}

/* The suite a TLS 1.2 handshake offering only `cipher` got ("(NONE)" when refused). */
static char *tls12_with(int port, const char *cipher)
{
    return capture("openssl s_client -connect 127.0.0.1:%d -tls1_2 -cipher %s </dev/null 2>&1 | "
                   "sed -n 's/.*, Cipher is \\(.*\\)/\\1/p' | head -1 | tr -d '\\n'",
                   port, cipher);
}

/* OpenSSL's own default offers CBC suites (MAC-then-encrypt, Lucky13);
 * weft's default is the AEAD ones, and tls.ciphers still decides. */
Test(tls, tls12_offers_only_aead_suites_unless_tls_ciphers_says_otherwise)
{
    static const char *const cbc[] = {"ECDHE-RSA-AES128-SHA", "ECDHE-RSA-AES256-SHA", "ECDHE-RSA-AES128-SHA256",
                                      "ECDHE-RSA-AES256-SHA384", "AES128-SHA", "AES128-GCM-SHA256"};
    static const char *const aead[] = {"ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-RSA-AES256-GCM-SHA384",
                                       "ECDHE-RSA-CHACHA20-POLY1305"};
    for (size_t i = 0; i < sizeof(cbc) / sizeof(cbc[0]); i++) {
        char *got = tls12_with(tls_port, cbc[i]);
        cr_assert_str_eq(got, "(NONE)", "%s is not offered by default (got '%s')", cbc[i], got);
        free(got);
    }
    for (size_t i = 0; i < sizeof(aead) / sizeof(aead[0]); i++) {
        char *got = tls12_with(tls_port, aead[i]);
        cr_assert_str_eq(got, aead[i]);
        free(got);
    }
    char *got = tls12_with(cbc_port, "ECDHE-RSA-AES128-SHA");
    cr_assert_str_eq(got, "ECDHE-RSA-AES128-SHA", "tls.ciphers overrides the default");
    free(got);
    got = tls12_with(cbc_port, "ECDHE-RSA-CHACHA20-POLY1305");
    cr_assert_str_eq(got, "(NONE)", "and only what it names: '%s'", got);
    free(got);
    wt_finish(&srv);
}

static char *serial(void)
{
    return capture("openssl s_client -connect 127.0.0.1:%d -servername localhost </dev/null 2>/dev/null | "
                   "openssl x509 -noout -serial",
                   tls_port);
}

static void wait_log(const char *needle) { free(wt_wait_log(&srv, needle, 5000)); }

static void *slow_request(void *arg)
{
    char *out = capture("curl -sk -o /dev/null -w '%%{http_code}' https://127.0.0.1:%d/slow", tls_port);
    snprintf(arg, 16, "%s", out);
    free(out);
    return NULL;
}

Test(tls, reload_rotates_the_certificate_without_failing_open_connections)
{
    char *s = serial();
    cr_assert(strstr(s, "serial=03E9") != NULL, "first certificate (1001): %s", s);
    free(s);
    char slow_status[16] = "";
    pthread_t t;
    pthread_create(&t, NULL, slow_request, slow_status);
    wt_wait_metric(&srv, "weft_inflight_requests", 1, 10000); /* the slow request is in flight */
    make_cert(srv.dir, "server", 2002);
    cr_assert_eq(kill(srv.pid, SIGHUP), 0);
    wait_log("generation 2 serving");
    s = serial();
    cr_assert(strstr(s, "serial=07D2") != NULL, "renewed certificate (2002) after reload: %s", s);
    free(s);
    pthread_join(t, NULL);
    cr_assert_str_eq(slow_status, "200", "a connection opened before the reload completes its request");

    /* a broken renewal is refused and the working certificate stays */
    cr_assert_eq(sh("cd %s && echo broken > .c.pem && mv .c.pem server.crt", srv.dir), 0);
    cr_assert_eq(kill(srv.pid, SIGHUP), 0);
    wait_log("refused");
    char *log = wt_read_log(&srv);
    cr_assert(strstr(log, "cannot use certificate chain") != NULL && strstr(log, "server.crt") != NULL, "%s", log);
    free(log);
    s = serial();
    cr_assert(strstr(s, "serial=07D2") != NULL, "old certificate kept: %s", s);
    free(s);
    wt_finish(&srv);
}

Test(tls, plaintext_to_the_tls_port_is_an_error_not_a_crash)
{
    char *out = capture("curl -s -o /dev/null -w '%%{http_code}' http://127.0.0.1:%d/hello; echo \" rc=$?\"", tls_port);
    cr_assert(strstr(out, "rc=0") == NULL || strncmp(out, "200", 3) != 0, "plaintext must not be served: %s", out);
    free(out);
    out = capture("curl -sk https://127.0.0.1:%d/hello", tls_port);
    cr_assert_str_eq(out, "hello", "still serving after a plaintext request");
    free(out);
    wt_finish(&srv);
}

Test(tls_check, wrong_key_is_refused_by_weft_t_naming_the_file, .timeout = 60)
{
    wt_server s = {0};
    wt_write_conf(&s, "# placeholder\n");
    make_cert(s.dir, "a", 1);
    make_cert(s.dir, "b", 2);
    char conf[1024];
    snprintf(conf, sizeof(conf),
             "listen = ( { address = \"127.0.0.1:0\"; tls = { certificate = \"a.crt\"; key = \"b.key\"; }; } );\n"
             WT_HELLO_ROUTES "\n");
    wt_write_conf(&s, conf);
    char *out;
    const char *args[] = {"-t", "-c", s.conf, NULL};
    cr_assert_eq(wt_run(&out, args, NULL), 1, "%s", out);
    cr_assert(strstr(out, "b.key does not match certificate") != NULL, "%s", out);
    free(out);
    snprintf(conf, sizeof(conf),
             "listen = ( { address = \"127.0.0.1:0\"; tls = { certificate = \"missing.crt\"; key = \"b.key\"; }; } );\n"
             WT_HELLO_ROUTES "\n");
    wt_write_conf(&s, conf);
    cr_assert_eq(wt_run(&out, args, NULL), 1, "%s", out);
    cr_assert(strstr(out, "missing.crt") != NULL, "%s", out);
    free(out);
    wt_finish(&srv);
}
