#include "edge/static_guard.h"

#include "base/hex.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <stdio.h>
#include <unistd.h>

long weft_static_decode(const char *rest, size_t len, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        char c = rest[i];
        if (c == '%') {
            int hi = i + 2 < len ? weft_hex_value(rest[i + 1]) : -1, lo = i + 2 < len ? weft_hex_value(rest[i + 2]) : -1;
            if (hi < 0 || lo < 0)
                return -400;
            c = (char)(hi * 16 + lo);
            if (c == '\0')
                return -400;
            /* "%2F" inside a segment would become a separator here, after
             * routing and dot resolution were done on real slashes only. */
            if (c == '/' || c == '\\')
                return -404;
            i += 2;
        }
        out[o++] = c;
    }
    out[o] = '\0';
    for (size_t i = 0; i < o; i++)
        if (out[i] == '.' && (i == 0 || out[i - 1] == '/'))
            return -404;
    return (long)o;
}

/* Where the kernel has no openat2 (before 5.6) or a sandbox filters it,
 * the same answer from realpath: slower, and racy against a local writer,
 * which the kernel's walk is not. */
static int escapes_by_realpath(const char *root, const char *rel)
{
    char target[PATH_MAX * 2];
    size_t n = strlen(root);
    snprintf(target, sizeof(target), "%s/%s", root, rel);
    char *real = realpath(target, NULL);
    if (real == NULL)
        return 2; /* nothing there */
    size_t rl = (size_t)n;
    int inside = strncmp(real, root, rl) == 0 && (real[rl] == '\0' || real[rl] == '/' || rl == 1);
    free(real);
    return !inside;
}

#define ABSENT 2

/* 1: `rel` resolves outside the root; 0: inside; ABSENT: nothing there. */
static int one_escapes(int rootfd, const char *root, const char *rel)
{
    struct open_how how = {.flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS};
    long fd = syscall(SYS_openat2, rootfd, rel[0] != '\0' ? rel : ".", &how, sizeof(how));
    if (fd >= 0) {
        close((int)fd);
        return 0;
    }
    switch (errno) {
    case EXDEV: /* a symlink (or "..") led out of the tree */
    case ELOOP:
        return 1;
    case ENOSYS:
    case EPERM:
        return escapes_by_realpath(root, rel);
    default:
        return ABSENT; /* ENOENT, ENOTDIR, EACCES: h2o will not serve it either */
    }
}

static const char *const variant_ext[] = {".br", ".zst", ".gz", ".zstd", NULL};

/* 1: the file or a sibling escapes; 0: none does and one of them is there; ABSENT: none is there. */
static int file_escapes(int rootfd, const char *root, char *buf, size_t len, int variants)
{
    int r = one_escapes(rootfd, root, buf);
    if (r == 1)
        return 1;
    for (size_t k = 0; variants && variant_ext[k] != NULL; k++) {
        strcpy(buf + len, variant_ext[k]);
        int v = one_escapes(rootfd, root, buf);
        buf[len] = '\0';
        if (v == 1)
            return 1;
        if (v == 0)
            r = 0;
    }
    return r;
}

int weft_static_escapes(int rootfd, const char *root, const char *rel, size_t rel_len, char *const *index, int variants)
{
    char buf[PATH_MAX];
    if (rel_len + 256 + 8 >= sizeof(buf))
        return 1; /* longer than any path the kernel would open */
    memcpy(buf, rel, rel_len);
    buf[rel_len] = '\0';
    if (rel_len > 0 && rel[rel_len - 1] != '/')
        return file_escapes(rootfd, root, buf, rel_len, variants);
    /* A directory: the directory itself, then each index h2o may try. */
    int r = one_escapes(rootfd, root, buf);
    if (r != 0)
        return r;
    r = ABSENT;
    for (size_t i = 0; index[i] != NULL; i++) {
        size_t n = strlen(index[i]);
        memcpy(buf + rel_len, index[i], n + 1);
        int f = file_escapes(rootfd, root, buf, rel_len + n, variants);
        if (f == 1)
            return 1;
        if (f == 0)
            r = 0;
        buf[rel_len] = '\0';
    }
    return r;
}
