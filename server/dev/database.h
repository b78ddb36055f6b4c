/* `weft dev`'s Dev Service: a private PostgreSQL when nothing points at one. */
#ifndef WEFT_DEV_DATABASE_H
#define WEFT_DEV_DATABASE_H

#include <stddef.h>

/**
 * Unless PGHOST, PGSERVICE or PGDATABASE is set, starts a private cluster in
 * state_dir/pg with the pgdev script (as `packaging/run.sh` does) and sets
 * the PG* variables to it. pgdir gets its directory, or "" when none was
 * started (then database routes answer 503; logged).
 */
void weft_dev_database_start(const char *state_dir, char *pgdir, size_t size);
/** Stops the cluster weft_dev_database_start started (pgdir "": nothing). */
void weft_dev_database_stop(const char *pgdir);

#endif
