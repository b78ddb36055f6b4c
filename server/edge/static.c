#include "edge/static.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "edge/static_cache.h"
#include "edge/static_guard.h"
#include "edge/static_range.h"
#include "edge/static_write.h"
#include "request/respond.h"

struct weft_static {
    const weft_static_cfg *cfg;
    size_t plen; /* of the prefix as the path h2o maps: 0 for the root route "/" */
    uint64_t id; /* unique in the process: the check cache's key, never reused like an address */
    char real[PATH_MAX]; /* cfg->dir, resolved when the generation was built */
    int rootfd;          /* the same directory, for openat2 beneath it */
    char via_fd[64];     /* "/proc/self/fd/N": the path h2o opens files under */
    h2o_pathconf_t pathconf; /* private: h2o's handler wants one, no host ever sees it */
    h2o_handler_t *handler;  /* h2o's file handler, called directly */
};

/* h2o numbers each handler it creates in its global config; these
 * handlers are never registered on a host, so their numbers are never
 * read. Control thread only. */
static h2o_globalconf_t private_global;
static uint64_t next_id;

weft_static *weft_static_new(const weft_static_cfg *cfg, h2o_mimemap_t *mimemap, char *why, size_t size)
{
    weft_static *s = calloc(1, sizeof(*s));
    if (s == NULL) {
        snprintf(why, size, "out of memory");
        return NULL;
    }
    s->cfg = cfg;
    s->plen = strcmp(cfg->path, "/") == 0 ? 0 : strlen(cfg->path);
    s->id = ++next_id;
    if (realpath(cfg->dir, s->real) == NULL ||
        (s->rootfd = open(s->real, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0) {
        snprintf(why, size, "dir '%s': %s", cfg->dir, strerror(errno));
        free(s);
        return NULL;
    }
    /* h2o opens files by path. Through the descriptor's /proc link, that
     * path names the directory the checks resolve beneath, even after
     * someone renames another directory into cfg->dir: the two can never
     * disagree. A reload opens the directory again. Without /proc, the
     * real path (a directory swapped in is then checked against the old one:
     * reload after swapping). */
    snprintf(s->via_fd, sizeof(s->via_fd), "/proc/self/fd/%d", s->rootfd);
    struct stat a, b;
    const char *serve_from = stat(s->via_fd, &a) == 0 && fstat(s->rootfd, &b) == 0 && a.st_ino == b.st_ino &&
                                     a.st_dev == b.st_dev
                                 ? s->via_fd
                                 : s->real;
    s->pathconf.global = &private_global;
    s->pathconf.path = h2o_iovec_init(cfg->path, strlen(cfg->path));
    int flags = cfg->send_compressed ? H2O_FILE_FLAG_SEND_COMPRESSED : 0;
    h2o_file_register(&s->pathconf, serve_from, (const char **)cfg->index, mimemap, flags);
    s->handler = s->pathconf.handlers.entries[0]; /* the file handler's own struct is private to h2o */
    return s;
}

void weft_static_free(weft_static *s)
{
    if (s == NULL)
        return;
    if (s->handler->dispose != NULL)
        s->handler->dispose(s->handler);
    free(s->handler);
    free(s->pathconf.handlers.entries);
    close(s->rootfd);
    free(s);
}

const weft_static_cfg *weft_static_cfg_of(const weft_static *s) { return s->cfg; }

static int answer(h2o_req_t *req, int status, const char *message)
{
    weft_respond_text(req, status, message);
    return status;
}

/* The path h2o maps onto the directory: the prefix as the route names it
 * ("/" for the root route: the rest then starts with its own slash), then
 * the decoded rest. A plain path is that already (the router matched the
 * prefix byte for byte). Sets *path_len; NULL with the answer sent. */
static char *file_path(const weft_static *s, h2o_req_t *req, weft_static_target t, size_t *path_len)
{
    if (t.plain) {
        *path_len = t.len;
        return (char *)t.norm;
    }
    const char *rest = t.norm + t.prefix_len;
    size_t rest_len = t.len - t.prefix_len;
    size_t plen = s->plen;
    char *path = h2o_mem_alloc_pool(&req->pool, char, plen + rest_len + 2);
    memcpy(path, s->cfg->path, plen);
    long n = weft_static_decode(rest, rest_len, path + plen);
    if (n == -400) {
        answer(req, 400, "bad request target: a malformed or NUL escape");
        return NULL;
    }
    if (n < 0) {
        answer(req, 404, "not found");
        return NULL;
    }
    if (n == 0 && plen == 0) { /* "/" itself */
        path[0] = '/';
        path[1] = '\0';
        n = 1;
    }
    *path_len = plen + (size_t)n;
    return path;
}

int weft_static_serve(const weft_static *s, h2o_req_t *req, weft_static_target t)
{
    size_t plen = s->plen, path_len;
    char *path = file_path(s, req, t, &path_len);
    if (path == NULL)
        return req->res.status;
    /* The two headers this reads, in one pass (h2o's file handler reads its own). */
    ssize_t accept_encoding = -1, range = -1;
    for (size_t i = 0; i < req->headers.size; i++) {
        const h2o_iovec_t *name = req->headers.entries[i].name;
        if (name == &H2O_TOKEN_ACCEPT_ENCODING->buf && accept_encoding < 0)
            accept_encoding = (ssize_t)i;
        else if (name == &H2O_TOKEN_RANGE->buf && range < 0)
            range = (ssize_t)i;
    }
    if (!s->cfg->follow_symlinks) {
        const char *rel = path + plen;
        size_t rel_len = path_len - plen;
        while (rel_len > 0 && *rel == '/')
            rel++, rel_len--;
        int variants = s->cfg->send_compressed && accept_encoding >= 0;
        if (!weft_static_cache_hit(s->id, rel, rel_len, variants)) {
            int e = weft_static_escapes(s->rootfd, s->real, rel, rel_len, s->cfg->index, variants);
            if (e == 1)
                return answer(req, 404, "not found");
            if (e == 0) /* only what exists: h2o's file cache holds it for as long */
                weft_static_cache_put(s->id, rel, rel_len, variants);
        }
    }
    if (range >= 0 &&
        !weft_range_acceptable(req->headers.entries[range].value.base, req->headers.entries[range].value.len))
        h2o_delete_header(&req->headers, range);
    /* h2o's handler maps path_normalized below its prefix onto the
     * directory: it must see exactly the path checked above. */
    req->path_normalized = h2o_iovec_init(path, path_len);
    req->path_normalized_has_null_char = 0;
    if (req->version < 0x200)
        weft_static_one_write(req);
    if (s->handler->on_req(s->handler, req) != 0)
        return answer(req, 404, "not found");
    return req->res.status;
}
