/* The `timer` group: plugin/ptimer.c, with a stop that is idempotent. */
#include "plugin/host.h"
#include "plugin/ptimer.h"

/* ABI 1 said WEFT_CANCELLED for "already stopped", which read as a failure;
 * either way the timer will not run again, which is all a caller asks. */
static weft_rc timer_stop(weft_plugin_timer *t)
{
    return weft_ptimer_timer_stop(t) == WEFT_ERROR ? WEFT_ERROR : WEFT_OK;
}

const weft_host_timer weft_host_timer_group = {
    .struct_size = sizeof(weft_host_timer),
    .version = WEFT_HOST_TIMER_VERSION,
    .start = weft_ptimer_timer_start,
    .stop = timer_stop,
};
