#include "plugin/quarantine.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "base/sigsafe.h"

/* Read by the signal handler: written only while no plugin code runs on a
 * new choice (start-up, and a reload re-choosing the same place). */
static char state_dir[1024];

void weft_quarantine_dir_for(const weft_config *cfg, char *out, size_t size)
{
    const char *env = getenv("STATE_DIRECTORY");
    out[0] = '\0';
    if (cfg->state_dir != NULL) {
        snprintf(out, size, "%s", cfg->state_dir);
    } else if (env != NULL && *env) {
        /* systemd joins several StateDirectory= entries with ':' */
        snprintf(out, size, "%.*s", (int)strcspn(env, ":"), env);
    } else if (cfg->pid_file != NULL) {
        snprintf(out, size, "%s", cfg->pid_file);
        char *slash = strrchr(out, '/');
        if (slash != NULL)
            *(slash == out ? slash + 1 : slash) = '\0';
        else
            snprintf(out, size, ".");
    }
}

const char *weft_quarantine_configure(const weft_config *cfg)
{
    char dir[sizeof(state_dir)];
    weft_quarantine_dir_for(cfg, dir, sizeof(dir));
    if (dir[0] != '\0' && mkdir(dir, 0750) != 0 && errno != EEXIST)
        weft_log_warn("state directory %s: cannot create it (%s): crash records will not be kept", dir,
                      strerror(errno));
    if (strcmp(dir, state_dir) != 0)
        memcpy(state_dir, dir, sizeof(state_dir));
    return state_dir;
}

static char *record_path(char *p, char *end, const char *dir, const char *plugin, const char *suffix)
{
    p = weft_ss_append(p, end, dir);
    p = weft_ss_append(p, end, "/crash-");
    p = weft_ss_append(p, end, plugin);
    p = weft_ss_append(p, end, ".rec");
    p = weft_ss_append(p, end, suffix);
    return p;
}

static char *field(char *p, char *end, const char *key, const char *value)
{
    p = weft_ss_append(p, end, key);
    p = weft_ss_append(p, end, " ");
    p = weft_ss_append_n(p, end, value, 1024);
    return weft_ss_append(p, end, "\n");
}

int weft_crash_record_write(const weft_quarantine *q, char *path, size_t size)
{
    path[0] = '\0';
    if (state_dir[0] == '\0' || q->plugin[0] == '\0' || size < 2)
        return -1;
    char tmp[1400], buf[2048];
    char *end = record_path(tmp, tmp + sizeof(tmp) - 1, state_dir, q->plugin, ".tmp");
    *end = '\0';
    char *p = buf, *bend = buf + sizeof(buf);
    p = field(p, bend, "plugin", q->plugin);
    p = field(p, bend, "version", q->version);
    p = field(p, bend, "sha256", q->sha256);
    p = field(p, bend, "signal", q->signal);
    p = field(p, bend, "route", q->route);
    p = field(p, bend, "dispatch", q->dispatch);
    p = field(p, bend, "request", q->request);
    p = weft_ss_append(p, bend, "since ");
    p = weft_ss_append_u64(p, bend, (uint64_t)q->since);
    p = weft_ss_append(p, bend, "\n");
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    int ok = write(fd, buf, (size_t)(p - buf)) == p - buf;
    ok = close(fd) == 0 && ok;
    char *pend = record_path(path, path + size - 1, state_dir, q->plugin, "");
    *pend = '\0';
    /* rename: a record is whole or absent, even if we die mid-write */
    if (!ok || rename(tmp, path) != 0) {
        unlink(tmp);
        path[0] = '\0';
        return -1;
    }
    return 0;
}

/* The crash line and backtrace kept next to a record (ops/crash.c). */
static void unlink_log(const char *record)
{
    char log[2048];
    size_t n = strlen(record);
    if (n > 4 && n < sizeof(log)) {
        snprintf(log, sizeof(log), "%.*s.log", (int)(n - 4), record);
        unlink(log);
    }
}

static int record_read(const char *path, weft_quarantine *q)
{
    FILE *f = fopen(path, "re");
    if (f == NULL)
        return -1;
    memset(q, 0, sizeof(*q));
    char line[1400];
    while (fgets(line, sizeof(line), f) != NULL) {
        line[strcspn(line, "\n")] = '\0';
        char *v = strchr(line, ' ');
        if (v == NULL)
            continue;
        *v++ = '\0';
        struct {
            const char *key;
            char *dst;
            size_t size;
        } keys[] = {{"plugin", q->plugin, sizeof(q->plugin)},       {"version", q->version, sizeof(q->version)},
                    {"sha256", q->sha256, sizeof(q->sha256)},       {"signal", q->signal, sizeof(q->signal)},
                    {"route", q->route, sizeof(q->route)},          {"dispatch", q->dispatch, sizeof(q->dispatch)},
                    {"request", q->request, sizeof(q->request)}};
        for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
            if (strcmp(line, keys[i].key) == 0)
                snprintf(keys[i].dst, keys[i].size, "%s", v);
        if (strcmp(line, "since") == 0)
            q->since = (time_t)strtoll(v, NULL, 10);
    }
    fclose(f);
    return q->plugin[0] != '\0' && q->sha256[0] != '\0' ? 0 : -1;
}

void weft_quarantine_describe(const weft_quarantine *q, char *out, size_t size)
{
    snprintf(out, size, "plugin %s %s crashed with %s in route %s (dispatch=%s) on %s", q->plugin, q->version,
             q->signal, q->route, q->dispatch, q->request);
}

int weft_quarantine_check(const char *name, const char *sha256, weft_quarantine *out)
{
    if (state_dir[0] == '\0' || sha256 == NULL || sha256[0] == '\0')
        return 0;
    char path[1400];
    *record_path(path, path + sizeof(path) - 1, state_dir, name, "") = '\0';
    weft_quarantine rec;
    memset(out, 0, sizeof(*out));
    if (record_read(path, &rec) != 0)
        return 0;
    if (strcmp(rec.sha256, sha256) == 0) {
        *out = rec;
        return 1;
    }
    /* Another build is installed now: the crash says nothing about it. */
    unlink_log(path);
    if (unlink(path) == 0)
        weft_log_info("plugin %s: crash record %s is for another build (sha256 %.12s, now %.12s); removed, the "
                      "plugin serves again",
                      name, path, rec.sha256, sha256);
    return 0;
}

int weft_quarantine_clear(const char *dir, const char *name, void (*said)(const weft_quarantine *q))
{
    DIR *d = opendir(dir);
    if (d == NULL)
        return errno == ENOENT ? 0 : -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        size_t len = strlen(e->d_name);
        if (strncmp(e->d_name, "crash-", 6) != 0 || len < 11 || strcmp(e->d_name + len - 4, ".rec") != 0)
            continue;
        if (name != NULL && (len - 10 != strlen(name) || strncmp(e->d_name + 6, name, len - 10) != 0))
            continue;
        char path[2048];
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        weft_quarantine q;
        int readable = record_read(path, &q) == 0;
        unlink_log(path);
        if (unlink(path) != 0)
            continue;
        n++;
        if (said != NULL && readable)
            said(&q);
    }
    closedir(d);
    return n;
}
