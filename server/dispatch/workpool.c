#include "dispatch/workpool.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "base/log.h"
#include "base/signals.h"
#include "dispatch/coro.h"

WEFT_ROUTE_SLOT(weft_workpool_route_slot)

struct weft_workpool {
    char *name;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    weft_work *head, *tail; /* FIFO */
    size_t queued, queue_max;
    int size, busy, stopping;
    int waiting; /* threads blocked for work */
    unsigned long long rejected, completed, withdrawn, expired, lend_refused;
    int queue_timeout_ms;
    int started; /* threads alive: started on demand, up to size + lent */
    /* Threads running long-lived work (a WebSocket, a stream) are lent: they
     * no longer count against `size`, and another thread may take their
     * place, so 200 idle WebSockets cannot hold a 200-thread pool. */
    int lent, max_lent;
    int nice_failed; /* warned once */
    int nice; /* each worker thread's own nice value (Linux: per thread) */
    pthread_cond_t gone_cv; /* the last thread has left (free) */
    /* Threads that left, to be joined (by the next grow, or free): a
     * lent thread that is surplus when its work returns ends, and the
     * pool must not hold its stack as a zombie until free. */
    pthread_t *exited;
    size_t n_exited, cap_exited;
    int grow_failed; /* reported once */
};

/* The pool whose work this worker runs lent (weft_workpool_lend). */
static __thread weft_workpool *lent_from;

static void unlink_work(weft_workpool *p, weft_work *w)
{
    if (w->prev != NULL)
        w->prev->next = w->next;
    else
        p->head = w->next;
    if (w->next != NULL)
        w->next->prev = w->prev;
    else
        p->tail = w->prev;
    w->next = w->prev = w; /* marks "not queued" for weft_workpool_cancel */
    p->queued--;
}

static void *worker_main(void *arg)
{
    weft_workpool *p = arg;
    /* Signals belong to the main thread, which turns them into orderly actions. */
    weft_signals_block_async();
    /* Handlers run here: a crash (even a stack overflow) must still be
     * reported, which needs a stack of its own. */
    weft_coro_thread_init();
    /* Below the loops: on a small machine CPU-bound pool work then takes
     * what the event loops leave instead of delaying their replies. Linux
     * applies a nice value to the one thread whose id is given. */
    if (p->nice != 0 && setpriority(PRIO_PROCESS, (id_t)gettid(), p->nice) != 0 && p->nice_failed++ == 0)
        weft_log_warn("pool '%s': cannot set nice %d on its workers: %s", p->name, p->nice, strerror(errno));
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (p->head == NULL && !p->stopping) {
            p->waiting++;
            pthread_cond_wait(&p->cv, &p->mu);
            p->waiting--;
        }
        weft_work *w = p->head;
        if (w == NULL)
            break; /* stopping and drained */
        unlink_work(p, w);
        p->busy++;
        pthread_mutex_unlock(&p->mu);
        w->run(w);
        pthread_mutex_lock(&p->mu);
        p->completed++;
        if (lent_from != p) {
            p->busy--;
            continue;
        }
        lent_from = NULL;
        p->lent--;
        /* Another thread took this one's place while it was lent: one of
         * the two is surplus now, and this one goes. */
        if (p->started - p->lent > p->size)
            break;
    }
    /* Joined later (reap); the last one out tells weft_workpool_free. */
    if (p->n_exited == p->cap_exited) {
        size_t cap = p->cap_exited != 0 ? p->cap_exited * 2 : 16;
        pthread_t *bigger = realloc(p->exited, cap * sizeof(*bigger));
        if (bigger != NULL) {
            p->exited = bigger;
            p->cap_exited = cap;
        }
    }
    if (p->n_exited < p->cap_exited)
        p->exited[p->n_exited++] = pthread_self();
    else
        pthread_detach(pthread_self()); /* out of memory: nobody will join it */
    if (--p->started == 0)
        pthread_cond_broadcast(&p->gone_cv);
    pthread_mutex_unlock(&p->mu);
    weft_coro_thread_cleanup();
    return NULL;
}

weft_workpool *weft_workpool_new(const char *name, int size, int queue)
{
    weft_workpool *p = calloc(1, sizeof(*p));
    if (p == NULL)
        return NULL;
    p->name = strdup(name);
    p->size = size;
    p->queue_max = (size_t)queue;
    p->max_lent = size;
    if (p->name == NULL) {
        free(p);
        return NULL;
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    pthread_cond_init(&p->gone_cv, NULL);
    return p;
}

/* Joins the threads that have left (they unlocked p->mu before
 * returning, so this waits only for their last instructions). Under p->mu. */
static void reap(weft_workpool *p)
{
    for (size_t i = 0; i < p->n_exited; i++)
        pthread_join(p->exited[i], NULL);
    p->n_exited = 0;
}

/* Threads start when work finds none waiting, not all at creation: 200
 * threads started eagerly cost a default server 1.6 MiB of resident memory
 * and ~10 ms of its start (and as much again at every reload) although most
 * configurations never use the pool, or use a few threads of it. Under p->mu. */
static int grow(weft_workpool *p)
{
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    /* Blocking handlers need ordinary stacks, but 8 MiB of address space per
     * thread adds up at 200 threads; 512 KiB is plenty for handler code. */
    pthread_attr_setstacksize(&attr, 512 * 1024);
    reap(p);
    pthread_t t;
    int rc = pthread_create(&t, &attr, worker_main, p);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        if (p->grow_failed++ == 0)
            weft_log_error("pool '%s': cannot start worker thread %d of %d: %s", p->name, p->started + 1, p->size,
                           strerror(rc));
        return -1;
    }
    p->started++;
    return 0;
}

void weft_workpool_free(weft_workpool *p)
{
    if (p == NULL)
        return;
    pthread_mutex_lock(&p->mu);
    p->stopping = 1;
    pthread_cond_broadcast(&p->cv);
    while (p->started > 0)
        pthread_cond_wait(&p->gone_cv, &p->mu);
    reap(p);
    pthread_mutex_unlock(&p->mu);
    free(p->exited);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    pthread_cond_destroy(&p->gone_cv);
    free(p->name);
    free(p);
}

int weft_workpool_submit(weft_workpool *p, weft_work *w)
{
    w->next = NULL;
    pthread_mutex_lock(&p->mu);
    /* Work beyond the idle threads waits; the bound covers only the waiting. */
    size_t idle = (size_t)(p->size - p->busy);
    if (p->stopping || p->queued >= p->queue_max + idle) {
        p->rejected++;
        pthread_mutex_unlock(&p->mu);
        return -1;
    }
    w->prev = p->tail;
    if (p->tail != NULL)
        p->tail->next = w;
    else
        p->head = w;
    p->tail = w;
    p->queued++;
    /* Work not covered by a waiting thread gets a new one; a signalled
     * thread stays counted as waiting until it wakes, hence queued. */
    if ((size_t)p->waiting < p->queued && p->started - p->lent < p->size && grow(p) != 0 && p->started == 0) {
        unlink_work(p, w);
        p->rejected++;
        pthread_mutex_unlock(&p->mu);
        return -1;
    }
    pthread_mutex_unlock(&p->mu);
    /* After the unlock: a thread woken while the submitter still holds the
     * mutex sleeps again on it at once (two more context switches per
     * request, the largest share of a pool request's CPU in perf). The
     * condition variable lives as long as the pool, so signalling it
     * unlocked is safe; a thread that took the work meanwhile finds the
     * queue empty and waits again. */
    pthread_cond_signal(&p->cv);
    return 0;
}

static int take_back(weft_workpool *p, weft_work *w, unsigned long long *count)
{
    pthread_mutex_lock(&p->mu);
    int queued = w->next != w;
    if (queued) {
        unlink_work(p, w);
        (*count)++;
    }
    pthread_mutex_unlock(&p->mu);
    return queued ? 0 : -1;
}

int weft_workpool_cancel(weft_workpool *p, weft_work *w) { return take_back(p, w, &p->withdrawn); }
int weft_workpool_expire(weft_workpool *p, weft_work *w) { return take_back(p, w, &p->expired); }

void weft_workpool_set_queue_timeout(weft_workpool *p, int ms) { p->queue_timeout_ms = ms; }
void weft_workpool_set_max_lent(weft_workpool *p, int n) { p->max_lent = n; }

void weft_workpool_set_nice(weft_workpool *p, int nice) { p->nice = nice; }

int weft_workpool_lend(weft_workpool *p)
{
    pthread_mutex_lock(&p->mu);
    if (lent_from == p) {
        pthread_mutex_unlock(&p->mu);
        return 0;
    }
    if (p->lent >= p->max_lent) {
        p->lend_refused++;
        pthread_mutex_unlock(&p->mu);
        return -1;
    }
    p->lent++;
    p->busy--;
    lent_from = p;
    /* The work this thread leaves waiting gets a thread, as if it had returned. */
    if ((size_t)p->waiting < p->queued && p->started - p->lent < p->size)
        (void)grow(p);
    pthread_mutex_unlock(&p->mu);
    return 0;
}
int weft_workpool_queue_timeout(const weft_workpool *p) { return p->queue_timeout_ms; }

const char *weft_workpool_name(const weft_workpool *p) { return p->name; }

void weft_workpool_stats_get(weft_workpool *p, weft_workpool_stats *s)
{
    pthread_mutex_lock(&p->mu);
    s->size = p->size;
    s->started = p->started;
    s->busy = p->busy;
    s->queued = p->queued;
    s->queue_max = p->queue_max;
    s->rejected = p->rejected;
    s->completed = p->completed;
    s->withdrawn = p->withdrawn;
    s->expired = p->expired;
    s->lent = p->lent;
    s->max_lent = p->max_lent;
    s->lend_refused = p->lend_refused;
    pthread_mutex_unlock(&p->mu);
}
