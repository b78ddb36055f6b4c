#include "process/outcome.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/file.h"
#include "base/log.h"
#include "reload/reload.h"

void weft_outcome_path(const char *pid_file, char *out, size_t size) { snprintf(out, size, "%s.reload", pid_file); }

void weft_outcome_write(const char *pid_file)
{
    weft_reload_status rs;
    weft_reload_status_get(&rs);
    char path[4200], tmp[4300];
    weft_outcome_path(pid_file, path, sizeof(path));
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (f == NULL || fprintf(f, "%lu %d\n%s\n", rs.ok + rs.failed, rs.last_ok, rs.message) < 0 || fclose(f) != 0 ||
        rename(tmp, path) != 0) {
        weft_log_warn("cannot write %s (weft reload then cannot report the outcome)", path);
        if (f == NULL && fd >= 0)
            close(fd);
    }
}

int weft_outcome_read(const char *pid_file, weft_outcome *out)
{
    char path[4200];
    weft_outcome_path(pid_file, path, sizeof(path));
    char *text = weft_file_read(path, NULL);
    memset(out, 0, sizeof(*out));
    int n = 0;
    if (text == NULL || sscanf(text, "%lu %d\n%n", &out->attempts, &out->ok, &n) != 2) {
        free(text);
        return -1;
    }
    snprintf(out->message, sizeof(out->message), "%s", text + n);
    size_t len = strlen(out->message);
    while (len > 0 && out->message[len - 1] == '\n')
        out->message[--len] = '\0';
    free(text);
    return 0;
}
