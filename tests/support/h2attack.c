/* The HTTP/2 abuse tests' listener and client (h2attack.h). */
#include "h2attack.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void wt_tls_cert(const char *dir)
{
    char cmd[1024];
    snprintf(cmd, sizeof(cmd),
             "cd %s && openssl req -x509 -newkey rsa:2048 -nodes -keyout server.key -out server.crt -days 2 "
             "-subj /CN=localhost >/dev/null 2>&1",
             dir);
    cr_assert_eq(system(cmd), 0, "openssl");
}

int wt_tls_port(const wt_server *s)
{
    char *log = wt_read_log(s);
    const char *p = strstr(log, "listening on https://127.0.0.1:");
    cr_assert_not_null(p, "%s", log);
    int port = atoi(p + strlen("listening on https://127.0.0.1:"));
    free(log);
    return port;
}

void wt_h2_streams(int port, const char *path, int n, const char *mode, wt_h2_run *out)
{
    char cmd[512], line[256] = "";
    snprintf(cmd, sizeof(cmd), "/usr/bin/python3 %s/tests/support/rapid_reset.py %d %s %d %s", WEFT_SOURCE_DIR, port,
             path, n, mode);
    FILE *c = popen(cmd, "r");
    cr_assert_not_null(c);
    if (fgets(line, sizeof(line), c) == NULL)
        line[0] = '\0';
    cr_assert_eq(pclose(c), 0, "rapid_reset.py failed: %s", line);
    *out = (wt_h2_run){0};
    cr_assert_eq(sscanf(line, "sent=%d closed=%d ms=%lf goaway=%d", &out->sent, &out->closed, &out->ms, &out->goaway),
                 4, "%s", line);
}
