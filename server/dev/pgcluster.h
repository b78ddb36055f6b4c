/*
 * The private PostgreSQL cluster of `weft dev` and of the plugin test kit
 * (weft/test.h): both drive the pgdev script (packaging/pgdev.sh) through
 * here. libc only, because libweft-test compiles this very file.
 */
#ifndef WEFT_DEV_PGCLUSTER_H
#define WEFT_DEV_PGCLUSTER_H

#include <stddef.h>

enum {
    WEFT_PGCLUSTER_OK = 0,
    WEFT_PGCLUSTER_FAILED = -1,
    WEFT_PGCLUSTER_NO_SERVER = -2, /**< no PostgreSQL server programs, or no pgdev script */
};

/** The pgdev script: $WEFT_PGDEV if set, else `built_in`. */
const char *weft_pgcluster_script(const char *built_in);
/**
 * Starts a cluster in `dir` (created on first use: unix socket in dir only,
 * database "weft" with weft's sql/ applied), then applies the SQL file `sql`
 * (NULL: none), and calls set(ud, NAME, VALUE) for each PG* variable that
 * reaches it. The script's messages are appended to `log` (NULL: stderr).
 * Returns WEFT_PGCLUSTER_OK, WEFT_PGCLUSTER_NO_SERVER, or
 * WEFT_PGCLUSTER_FAILED; `why` gets a sentence on failure.
 */
int weft_pgcluster_start(const char *script, const char *dir, const char *sql, const char *log,
                         void (*set)(void *ud, const char *name, const char *value), void *ud, char *why,
                         size_t size);
/** Stops the cluster in `dir` (fine if it does not run); 0 or -1. */
int weft_pgcluster_stop(const char *script, const char *dir, const char *log);

#endif
