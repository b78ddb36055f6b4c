/* Fixture: a blocking-style handler that holds its thread the way real
 * libraries do, for dispatch = "auto". Options:
 *   mode      "fast" (no blocking), "usleep", "nanosleep" (raw libc sleeps),
 *             "recv" (a blocking recv on a socket that times out), "spin"
 *             (a tight CPU loop of `ms` of the thread's CPU time); default "fast"
 *   ms        how long the blocking part lasts (default 50)
 *   every     block only on every Nth request (default 1: each one), a
 *             route that blocks now and then
 *   sleep_ms  then a host sleep this long (it yields: the request stays in
 *             flight without holding anything; default 0)
 * A reload that changes `mode` turns a fast route into a blocking one. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include <weft/plugin.h>

enum { FAST, USLEEP, NANOSLEEP, RECV, SPIN };
static const char *const modes[] = {"fast", "usleep", "nanosleep", "recv", "spin"};

typedef struct stall {
    int mode;
    long long ms, sleep_ms, every;
    atomic_llong seen;
} stall;

static const weft_host *host;

static int init(const weft_host *h, weft_init *ctx, void **state)
{
    host = h;
    const char *m = host->opt_string(ctx, "mode", "fast");
    int mode = -1;
    for (int i = 0; i < 5; i++)
        if (strcmp(m, modes[i]) == 0)
            mode = i;
    if (mode < 0) {
        host->init_error(ctx, "mode '%s' is not one of fast, usleep, nanosleep, recv, spin", m);
        return WEFT_ERROR;
    }
    stall *s = malloc(sizeof(*s));
    if (s == NULL)
        return WEFT_ERROR;
    *s = (stall){.mode = mode, .ms = host->opt_int(ctx, "ms", 50), .sleep_ms = host->opt_int(ctx, "sleep_ms", 0),
                 .every = host->opt_int(ctx, "every", 1)};
    if (s->every < 1)
        s->every = 1;
    *state = s;
    return WEFT_OK;
}

static void fini(void *state) { free(state); }

/* The thread's own CPU time: a spin of `ms` is that much work even on a
 * loaded machine, where a wall-clock spin gets a fraction of it and weft
 * rightly says the loop was only waiting for a CPU (dispatch/auto.c). */
static double cpu_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static void block_recv(long long ms)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
        return;
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};
    setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    char c;
    (void)recv(sv[0], &c, 1, 0); /* nothing comes: it waits out the timeout, as a slow peer would */
    close(sv[0]);
    close(sv[1]);
}

static int handle(weft_req *req, void *state)
{
    stall *s = state;
    volatile uint64_t spins = 0;
    int blocks = atomic_fetch_add(&s->seen, 1) % s->every == 0;
    switch (blocks ? s->mode : FAST) {
    case USLEEP: usleep((useconds_t)(s->ms * 1000)); break;
    case NANOSLEEP: {
        struct timespec t = {(time_t)(s->ms / 1000), (long)(s->ms % 1000) * 1000000L};
        while (nanosleep(&t, &t) != 0)
            ;
        break;
    }
    case RECV: block_recv(s->ms); break;
    case SPIN: {
        double end = cpu_ms() + (double)s->ms;
        while (cpu_ms() < end)
            for (int i = 0; i < 1000; i++)
                spins++;
        break;
    }
    default: break;
    }
    if (s->sleep_ms > 0 && host->sleep_ms(req, (uint32_t)s->sleep_ms) != WEFT_OK)
        return WEFT_CANCELLED;
    host->res_printf(req, "stall mode=%s ms=%lld\n", modes[s->mode], s->mode == FAST ? 0 : s->ms);
    return WEFT_OK;
}

/* Built three times (tests/CMakeLists.txt): stall (handle only),
 * stall_async (handle_async only: auto keeps it reactive) and stall_none
 * (neither: the loader refuses it, and the route names its FILE:LINE). */
static int handle_async(weft_req *req, void *state)
{
    (void)state;
    host->res_printf(req, "stall async\n");
    return WEFT_OK;
}

static const weft_plugin descriptor = {
    WEFT_PLUGIN_HEADER,
#if defined(STALL_ASYNC)
    .name = "stall_async",
    .handle_async = handle_async,
#elif defined(STALL_NONE)
    .name = "stall_none",
#else
    .name = "stall",
    .handle = handle,
#endif
    .version = "1.0.0",
    .init = init,
    .fini = fini,
};

/* Each variant uses one of the two handlers. */
static int (*const unused[])(weft_req *, void *) __attribute__((unused)) = {handle, handle_async};

WEFT_EXPORT const weft_plugin *weft_plugin_entry(void) { return &descriptor; }
