/* Fixture: a handler that holds its thread for `ms` milliseconds (default
 * 60): with a raw usleep(), the mistake the blocked-loop detector exists to
 * catch, or with spin = 1 on the CPU, as a CPU-bound handler does, answering
 * how long it held it ("spun N us", its own clock reads at entry and exit:
 * what the server's latency must never undercut). */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <weft/plugin.h>

static const weft_host *host;

typedef struct blocker {
    long long ms;
    int spin;
} blocker;

static int init(const weft_host *h, weft_init *ctx, void **state)
{
    host = h;
    blocker *b = malloc(sizeof(*b));
    if (b == NULL)
        return WEFT_ERROR;
    *b = (blocker){.ms = host->opt_int(ctx, "ms", 60), .spin = host->opt_int(ctx, "spin", 0) != 0};
    *state = b;
    return WEFT_OK;
}

static void fini(void *state) { free(state); }

static long long now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int handle(weft_req *req, void *state)
{
    const blocker *b = state;
    if (!b->spin) {
        usleep((useconds_t)(b->ms * 1000));
        host->res_printf(req, "blocked\n");
        return WEFT_OK;
    }
    long long t0 = now_us(), t;
    volatile unsigned long long work = 0;
    while ((t = now_us()) - t0 < b->ms * 1000)
        for (int i = 0; i < 1000; i++)
            work += (unsigned long long)i * (unsigned long long)t;
    host->res_printf(req, "spun %lld us\n", t - t0);
    return WEFT_OK;
}

static const weft_plugin descriptor = {
    WEFT_PLUGIN_HEADER,
    .name = "blocker",
    .version = "1.0.0",
    .init = init,
    .fini = fini,
    .handle = handle,
    .handle_async = handle,
};

WEFT_EXPORT const weft_plugin *weft_plugin_entry(void) { return &descriptor; }
