/* The `sync` group: dispatch/hostsync.c's sleep and locks, one call each with an optional callback. */
#include "dispatch/hostsync.h"
#include "plugin/host.h"

static weft_rc sync_sleep(weft_req *r, uint32_t ms, weft_callback cb, void *arg)
{
    if (cb == NULL)
        return (weft_rc)weft_hostsync_sleep_ms(r, ms);
    weft_hostsync_sleep_async(r, ms, cb, arg);
    return WEFT_AGAIN;
}

static weft_rc sync_lock(weft_req *r, weft_mutex *m, weft_callback cb, void *arg)
{
    if (cb == NULL)
        return (weft_rc)weft_hostsync_mutex_lock(r, m);
    weft_hostsync_mutex_lock_async(r, m, cb, arg);
    return WEFT_AGAIN;
}

const weft_host_sync weft_host_sync_group = {
    .struct_size = sizeof(weft_host_sync),
    .version = WEFT_HOST_SYNC_VERSION,
    .sleep = sync_sleep,
    .mutex_new = weft_hostsync_mutex_new,
    .mutex_free = weft_hostsync_mutex_free,
    .lock = sync_lock,
    .unlock = weft_hostsync_mutex_unlock,
};
