/*
 * Whether a file the server runs or obeys (a plugin .so, a route fragment)
 * can be trusted: only root or the server's user could have written it.
 */
#ifndef WEFT_TRUST_H
#define WEFT_TRUST_H

#include <stddef.h>
#include <sys/stat.h>

/**
 * Resolves `path` (symlinks anywhere on the way are followed, and the place
 * they lead to is what counts) into `real` (PATH_MAX bytes) and checks that
 * it is a regular file, that it and every directory above it are owned by
 * root or the server's user and writable by nobody else (above the file's
 * own directory a root-owned sticky directory such as /tmp is accepted:
 * nobody can move our entries there). `kind` names the file in the reason
 * ("plugin" gives "plugin file ..." or "plugin directory ..."). Fills `st`
 * with the file's stat. Returns 0, or -1 with the reason in `why`.
 */
int weft_file_trusted(const char *kind, const char *path, char *real, struct stat *st, char *why, size_t size);

#endif
