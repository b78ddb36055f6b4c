/*
 * Which connection sets a loop has: the one for the serving database
 * settings, and those a reload retired, kept until their statements are
 * done (loop slots of db/'s). Loop thread.
 */
#include "db/db.h"
#include "core/loop.h"

/* The loop's connections for the serving settings, and those retired by a
 * reload until their statements are done. */
WEFT_LOOP_SLOT(db_slot)
WEFT_LOOP_SLOT(retired_slot)

void weft_dbloop_retire(weft_loop *loop, weft_dbloop *d)
{
    weft__dbloop_set_next(d, weft_loop_get(loop, retired_slot));
    weft_loop_set(loop, retired_slot, d);
    weft_dbloop_reap(loop, 0);
}

void weft_dbloop_reap(weft_loop *loop, int all)
{
    weft_dbloop *keep = NULL, *last = NULL;
    for (weft_dbloop *d = weft_loop_get(loop, retired_slot), *next; d != NULL; d = next) {
        next = weft__dbloop_next(d);
        if (all || weft_dbloop_inflight(d) == 0) {
            weft_dbloop_free(d);
            continue;
        }
        weft__dbloop_set_next(d, NULL);
        if (last != NULL)
            weft__dbloop_set_next(last, d);
        else
            keep = d;
        last = d;
    }
    weft_loop_set(loop, retired_slot, keep);
}

weft_dbloop *weft_dbloop_for(weft_loop *loop, const weft_db_cfg *cfg)
{
    /* A reload with new database settings gets new connections; the old set
     * retires once its statements are done. */
    weft_dbloop *d = weft_loop_get(loop, db_slot);
    if (d != NULL && !weft_db_cfg_equal(weft_dbloop_cfg(d), cfg)) {
        weft_loop_set(loop, db_slot, NULL);
        weft_dbloop_retire(loop, d);
        d = NULL;
    }
    if (weft_loop_get(loop, retired_slot) != NULL)
        weft_dbloop_reap(loop, 0);
    if (d == NULL) {
        d = weft_dbloop_new(loop, cfg);
        weft_loop_set(loop, db_slot, d);
    }
    return d;
}

/* ---- per-loop state: connections close when their loop stops ---- */

static void dbloop_teardown(weft_loop *L)
{
    weft_db_listen_close(L);
    weft_dbloop_free(weft_loop_get(L, db_slot));
    weft_loop_set(L, db_slot, NULL);
    weft_dbloop_reap(L, 1);
    weft_db_cancels_close();
}

static const weft_loop_hook dbloop_hook = {
    .teardown = dbloop_teardown, .pass = weft_dbloop_pass, .tick = weft_db_listen_tick};

void weft_db_attach(void) { weft_loop_add_hook(&dbloop_hook); }
