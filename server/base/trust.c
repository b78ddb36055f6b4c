#include "base/trust.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Owned by root or by us, and writable by nobody else. */
static int check_owner_mode(const char *kind, const char *what, const char *path, const struct stat *st, char *why,
                            size_t size)
{
    if (st->st_uid != 0 && st->st_uid != geteuid()) {
        snprintf(why, size, "%s %s %s is owned by uid %u, not by root or the server's user (uid %u)", kind, what,
                 path, (unsigned)st->st_uid, (unsigned)geteuid());
        return -1;
    }
    if (st->st_mode & (S_IWGRP | S_IWOTH)) {
        snprintf(why, size, "%s %s %s is writable by %s (mode %04o); run chmod go-w on it", kind, what, path,
                 (st->st_mode & S_IWOTH) ? "others" : "its group", (unsigned)(st->st_mode & 07777));
        return -1;
    }
    return 0;
}

int weft_file_trusted(const char *kind, const char *path, char *real, struct stat *st, char *why, size_t size)
{
    if (realpath(path, real) == NULL) {
        snprintf(why, size, "cannot resolve %s: %s", path, strerror(errno));
        return -1;
    }
    if (stat(real, st) != 0 || !S_ISREG(st->st_mode)) {
        snprintf(why, size, "%s is not a regular file", real);
        return -1;
    }
    if (check_owner_mode(kind, "file", real, st, why, size) != 0)
        return -1;
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s", real);
    int first = 1;
    for (char *slash = strrchr(dir, '/'); slash != NULL; slash = strrchr(dir, '/')) {
        *(slash == dir ? slash + 1 : slash) = '\0';
        struct stat dst;
        if (stat(dir, &dst) != 0) {
            snprintf(why, size, "cannot stat directory %s: %s", dir, strerror(errno));
            return -1;
        }
        /* The file's own directory must be writable by nobody else (even
         * sticky: strangers could add files). Above it, a root-owned sticky
         * directory such as /tmp is safe: nobody can move our entries. */
        int sticky_root = dst.st_uid == 0 && (dst.st_mode & S_ISVTX);
        if ((first || !sticky_root) && check_owner_mode(kind, "directory", dir, &dst, why, size) != 0)
            return -1;
        first = 0;
        if (slash == dir)
            break;
    }
    return 0;
}
