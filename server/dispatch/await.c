#include "dispatch/await.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/log.h"
#include "base/timer.h"
#include "dispatch/blocking.h"
#include "dispatch/coro.h"
#include "dispatch/dispatch.h"
#include "request/route.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define REC_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define REC_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define REC_POISON(p, n) ((void)(p), (void)(n))
#define REC_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

enum { MODE_COROUTINE = 1, MODE_WORKER, MODE_ASYNC };

/*
 * A worker waits on a futex word rather than a mutex and condition variable
 * set up and torn down for every wait. The loop then wakes it without
 * holding a lock the woken worker would find taken -- the bounce that cost
 * the pool's database path a context switch per statement (docs/BENCHMARKS.md)
 * -- and makes no system call at all when the answer came before the worker
 * went to sleep.
 */
enum { W_PENDING, W_DONE, W_SLEEPING };

static void futex_wait(atomic_int *word, int expected)
{
    /* EINTR, EAGAIN (the word already changed) and a stray wake-up all
     * return to the caller, which looks at the word again. */
    syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, expected, NULL, NULL, 0);
}

static void futex_wake(atomic_int *word) { syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0); }

/* What await.c keeps per request: reactive wait records given back (below)
 * and the reactive waits on their way, which weft_await_abandon_all ends. */
typedef struct rec rec;
typedef struct await_req {
    rec *free;         /* given back, for the request's next wait of their size */
    weft_await *async; /* weft_await_async begun, not done */
    int deferred;      /* abandon_all is among the request's defers */
} await_req;

WEFT_REQ_SLOT(recs_slot, await_req)

static void async_link(weft_await *a)
{
    await_req *ar = weft_req_ext(a->r, recs_slot);
    a->next_async = ar->async;
    ar->async = a;
}

/* A request has a handful at most (one per kind it waits for at once). */
static void async_unlink(weft_await *a)
{
    for (weft_await **p = &((await_req *)weft_req_ext(a->r, recs_slot))->async; *p != NULL; p = &(*p)->next_async)
        if (*p == a) {
            *p = a->next_async;
            return;
        }
}

static void on_cancel(weft_wait *w)
{
    weft_await *a = H2O_STRUCT_FROM_MEMBER(weft_await, wait, w);
    a->registered = 0; /* weft_req_cancel unlinked it */
    a->cancel(a);
}

/* Loop thread. The cancellation flag is set and the waits are run on this
 * same thread, so a request cancelled before this point is seen here and
 * one cancelled later finds the wait registered. */
static void begin(weft_await *a)
{
    if (weft_req_cancelled(a->r)) {
        weft_await_done(a, WEFT_CANCELLED);
        return;
    }
    if (a->cancel != NULL) {
        weft_req_wait_add(a->r, &a->wait, on_cancel);
        a->registered = 1;
    }
    a->start(a);
}

static void on_begin_msg(weft_msg *m) { begin(H2O_STRUCT_FROM_MEMBER(weft_await, msg, m)); }

void weft_await_done(weft_await *a, int rc)
{
    if (a->registered) {
        weft_req_wait_remove(a->r, &a->wait);
        a->registered = 0;
    }
    a->rc = rc;
    switch (a->mode) {
    case MODE_WORKER:
        /* From the exchange on the worker may return, dropping `a`: the
         * wake-up only names the address (a waiter that later sleeps at the
         * same address takes it as spurious and looks at its word again). */
        if (atomic_exchange_explicit(&a->word, W_DONE, memory_order_acq_rel) == W_SLEEPING)
            futex_wake(&a->word);
        return;
    case MODE_COROUTINE:
        a->done = 1;
        if (a->suspended) {
            a->suspended = 0;
            weft_dispatch_resume(a->r);
        }
        return;
    default:
        a->done = 1;
        async_unlink(a);
        if (!a->abandoned)
            a->complete(a);
        else if (a->abandon != NULL)
            a->abandon(a);
        return;
    }
}

int weft_await_block(weft_await *a)
{
    weft_req *r = a->r;
    a->done = a->suspended = a->registered = 0;
    switch (r->exec) {
    case WEFT_EXEC_COROUTINE:
        /* `a` is on the coroutine's stack, which stays put while it sleeps. */
        a->mode = MODE_COROUTINE;
        begin(a);
        while (!a->done) {
            a->suspended = 1;
            weft_coro_yield();
        }
        return a->rc;
    case WEFT_EXEC_WORKER:
        if (weft_req_cancelled(r))
            return WEFT_CANCELLED;
        a->mode = MODE_WORKER;
        atomic_init(&a->word, W_PENDING);
        weft_loop_post(r->loop, &a->msg, on_begin_msg);
        for (;;) {
            int w = atomic_load_explicit(&a->word, memory_order_acquire);
            if (w == W_DONE)
                return a->rc;
            if (w == W_PENDING &&
                !atomic_compare_exchange_strong_explicit(&a->word, &w, W_SLEEPING, memory_order_acq_rel,
                                                         memory_order_acquire))
                continue; /* it is W_DONE now */
            futex_wait(&a->word, W_SLEEPING);
        }
    case WEFT_EXEC_LOOP:
        break;
    }
    return WEFT_ERROR;
}

int weft_await_refused(weft_req *r, const char *call, const char *instead)
{
    if (r->exec != WEFT_EXEC_LOOP)
        return 0;
    weft_route *rt = r->route;
    uint64_t now = weft_now_ns(), last = atomic_load(&rt->misuse_last_ns);
    /* One line per route per interval: a handler doing it on every request must not flood the log. */
    if ((last == 0 || now - last >= weft_blocking_interval_ns()) &&
        atomic_compare_exchange_strong(&rt->misuse_last_ns, &last, now))
        weft_log_error("%s: %s called from a reactive handler returns WEFT_ERROR (it would wait for its own loop); "
                       "use %s, or dispatch = \"coroutine\" or \"pool\"",
                       rt->label, call, instead);
    return 1;
}

int weft_await_in_place(const weft_req *r) { return r->exec == WEFT_EXEC_WORKER; }

int weft_await_reactive(const weft_req *r) { return r->exec == WEFT_EXEC_LOOP; }

/* The handler has finished (its defers run on the loop thread): what it
 * still waits for is stopped, and nothing of it calls the handler back. */
static void abandon_all(weft_req *r, void *arg)
{
    (void)arg;
    await_req *ar = weft_req_ext(r, recs_slot);
    ar->deferred = 0;
    while (ar->async != NULL) {
        weft_await *a = ar->async;
        ar->async = a->next_async;
        a->abandoned = 1;
        /* Its weft_await_done, now (from cancel) or later, calls abandon, not complete. */
        if (a->registered) {
            weft_req_wait_remove(r, &a->wait);
            a->registered = 0;
            a->cancel(a);
        }
    }
}

void weft_await_async(weft_await *a)
{
    a->done = a->suspended = a->registered = a->abandoned = 0;
    a->mode = MODE_ASYNC;
    await_req *ar = weft_req_ext(a->r, recs_slot);
    if (!ar->deferred) {
        if (weft_req_defer(a->r, abandon_all, NULL) != 0) {
            a->rc = WEFT_UNAVAILABLE; /* out of memory: the handler answers 503, the process lives */
            a->done = 1;
            a->complete(a);
            return;
        }
        ar->deferred = 1;
    }
    async_link(a);
    begin(a);
}

/* ---- reactive wait records ---- */

/* Before the caller's bytes: the free list's link and the size the record was
 * made for. Reuse is by exact size, so a request holds at most as many
 * records of one size as it had waits of that size at one time -- one for a
 * handler that waits for one thing after the other, whatever it waits for. */
struct rec {
    struct rec *next;
    size_t size;
};
_Static_assert(sizeof(rec) % 16 == 0, "a record stays 16-aligned behind its header");

void *weft_await_rec_new(weft_req *r, size_t size)
{
    size = (size + 15) & ~(size_t)15;
    await_req *ar = weft_req_ext(r, recs_slot);
    for (rec **p = &ar->free; *p != NULL; p = &(*p)->next) {
        if ((*p)->size == size) {
            rec *h = *p;
            *p = h->next;
            REC_UNPOISON(h + 1, size);
            return h + 1;
        }
    }
    rec *h = weft_req_alloc(r, sizeof(*h) + size);
    if (h == NULL)
        return NULL;
    h->size = size;
    return h + 1;
}

void weft_await_rec_free(weft_req *r, void *p)
{
    rec *h = (rec *)p - 1;
    await_req *ar = weft_req_ext(r, recs_slot);
    /* Under ASan a record touched after it went back (by the operation that
     * ended, or by a caller that read it after its callback) is reported,
     * though its memory stays the request's. */
    REC_POISON(p, h->size);
    h->next = ar->free;
    ar->free = h;
}
