/*
 * Tests for server/workpool.c: FIFO order, the bound on waiting work,
 * statistics, and free() draining what is queued. A "gate" holds a worker
 * busy so that the queue state is known exactly while assertions run.
 */
#include "dispatch/workpool.h"

#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int open;
} gate;

static gate g_gate = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};

static void gate_wait(gate *g)
{
    pthread_mutex_lock(&g->mu);
    while (!g->open)
        pthread_cond_wait(&g->cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
}

static void gate_open(gate *g)
{
    pthread_mutex_lock(&g->mu);
    g->open = 1;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

typedef struct job {
    weft_work w; /* first member */
    int id;
    atomic_int ran;
} job;

static pthread_mutex_t order_mu = PTHREAD_MUTEX_INITIALIZER;
static int order[256];
static int n_order;
static atomic_int n_ran;

static void record(weft_work *w)
{
    job *j = (job *)w;
    atomic_fetch_add(&j->ran, 1);
    atomic_fetch_add(&n_ran, 1);
    pthread_mutex_lock(&order_mu);
    if (n_order < 256)
        order[n_order++] = j->id;
    pthread_mutex_unlock(&order_mu);
}

static void blocked(weft_work *w)
{
    gate_wait(&g_gate);
    record(w);
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Polls until the predicate on the stats holds; generous 10 s bound. */
static weft_workpool_stats wait_stats(weft_workpool *p, int busy, unsigned long long completed)
{
    weft_workpool_stats s;
    for (int i = 0; i < 10000; i++) {
        weft_workpool_stats_get(p, &s);
        if ((busy < 0 || s.busy == busy) && s.completed >= completed)
            return s;
        sleep_ms(1);
    }
    cr_assert_fail("stats never reached busy=%d completed=%llu (busy=%d completed=%llu)", busy, completed, s.busy,
                   s.completed);
    return s;
}

Test(workpool, name_and_initial_stats)
{
    weft_workpool *p = weft_workpool_new("db", 3, 7);
    cr_assert_not_null(p);
    cr_assert_str_eq(weft_workpool_name(p), "db");
    weft_workpool_stats s;
    memset(&s, 0xff, sizeof(s));
    weft_workpool_stats_get(p, &s);
    cr_assert_eq(s.size, 3);
    cr_assert_eq(s.started, 0, "threads start on demand, none before any work");
    cr_assert_eq(s.busy, 0);
    cr_assert_eq(s.queued, 0);
    cr_assert_eq(s.queue_max, 7);
    cr_assert_eq(s.rejected, 0);
    cr_assert_eq(s.completed, 0);
    weft_workpool_free(p);
}

Test(workpool, fifo_with_one_thread)
{
    weft_workpool *p = weft_workpool_new("fifo", 1, 100);
    cr_assert_not_null(p);
    static job blocker, jobs[20];
    blocker.id = -1;
    blocker.w.run = blocked;
    cr_assert_eq(weft_workpool_submit(p, &blocker.w), 0);
    wait_stats(p, 1, 0); /* the only worker is now held at the gate */
    for (int i = 0; i < 20; i++) {
        jobs[i].id = i;
        jobs[i].w.run = record;
        cr_assert_eq(weft_workpool_submit(p, &jobs[i].w), 0);
    }
    weft_workpool_stats s;
    weft_workpool_stats_get(p, &s);
    cr_assert_eq(s.queued, 20);
    cr_assert_eq(s.busy, 1);
    gate_open(&g_gate);
    s = wait_stats(p, 0, 21);
    cr_assert_eq(s.completed, 21);
    cr_assert_eq(s.queued, 0);
    cr_assert_eq(n_order, 21);
    cr_assert_eq(order[0], -1);
    for (int i = 0; i < 20; i++)
        cr_assert_eq(order[i + 1], i, "position %d ran job %d: not first come, first served", i + 1, order[i + 1]);
    weft_workpool_free(p);
}

Test(workpool, queue_bound_rejects_at_once)
{
    weft_workpool *p = weft_workpool_new("small", 1, 2);
    cr_assert_not_null(p);
    static job blocker, a, b, c;
    blocker.id = 0;
    blocker.w.run = blocked;
    a.id = 1;
    a.w.run = record;
    b.id = 2;
    b.w.run = record;
    c.id = 3;
    c.w.run = record;
    cr_assert_eq(weft_workpool_submit(p, &blocker.w), 0);
    wait_stats(p, 1, 0);
    cr_assert_eq(weft_workpool_submit(p, &a.w), 0);
    cr_assert_eq(weft_workpool_submit(p, &b.w), 0);
    cr_assert_eq(weft_workpool_submit(p, &c.w), -1, "a full queue must refuse the 4th submit");
    weft_workpool_stats s;
    weft_workpool_stats_get(p, &s);
    cr_assert_eq(s.rejected, 1);
    cr_assert_eq(s.queued, 2);
    cr_assert_eq(s.busy, 1);
    cr_assert_eq(weft_workpool_submit(p, &c.w), -1);
    weft_workpool_stats_get(p, &s);
    cr_assert_eq(s.rejected, 2, "every refusal is counted");
    gate_open(&g_gate);
    s = wait_stats(p, 0, 3);
    cr_assert_eq(s.completed, 3);
    cr_assert_eq(atomic_load(&c.ran), 0, "refused work must never run");
    /* Room again once the queue drained. */
    cr_assert_eq(weft_workpool_submit(p, &c.w), 0);
    wait_stats(p, 0, 4);
    cr_assert_eq(atomic_load(&c.ran), 1);
    weft_workpool_free(p);
}

Test(workpool, queue_zero_allows_only_idle_threads)
{
    weft_workpool *p = weft_workpool_new("direct", 2, 0);
    cr_assert_not_null(p);
    static job j[3];
    for (int i = 0; i < 3; i++) {
        j[i].id = i;
        j[i].w.run = blocked;
    }
    cr_assert_eq(weft_workpool_submit(p, &j[0].w), 0);
    cr_assert_eq(weft_workpool_submit(p, &j[1].w), 0);
    wait_stats(p, 2, 0);
    cr_assert_eq(weft_workpool_submit(p, &j[2].w), -1, "no idle thread and no queue");
    gate_open(&g_gate);
    weft_workpool_stats s = wait_stats(p, 0, 2);
    cr_assert_eq(s.rejected, 1);
    weft_workpool_free(p);
    cr_assert_eq(atomic_load(&j[2].ran), 0);
}

Test(workpool, many_threads_run_everything_once)
{
    weft_workpool *p = weft_workpool_new("wide", 4, 1000);
    cr_assert_not_null(p);
    static job jobs[200];
    for (int i = 0; i < 200; i++) {
        jobs[i].id = i;
        jobs[i].w.run = record;
        cr_assert_eq(weft_workpool_submit(p, &jobs[i].w), 0);
    }
    weft_workpool_stats s = wait_stats(p, 0, 200);
    cr_assert_eq(s.completed, 200);
    cr_assert_eq(s.rejected, 0);
    for (int i = 0; i < 200; i++)
        cr_assert_eq(atomic_load(&jobs[i].ran), 1, "job %d ran %d times", i, atomic_load(&jobs[i].ran));
    weft_workpool_free(p);
}

/* Submitters signal after unlocking the pool (a woken thread no longer
 * finds the mutex held): two loops' worth of concurrent submitters, workers
 * going idle and waking again all the time, must still run every job
 * exactly once — a lost wake-up would leave work queued and the wait below
 * failing. */
enum { SUBMITTERS = 2, PER_SUBMITTER = 3000 };
static job burst_jobs[SUBMITTERS][PER_SUBMITTER];

static void *submit_burst(void *arg)
{
    weft_workpool *p = *(weft_workpool **)arg;
    static atomic_int next;
    job *mine = burst_jobs[atomic_fetch_add(&next, 1)];
    for (int i = 0; i < PER_SUBMITTER; i++) {
        mine[i].w.run = record;
        while (weft_workpool_submit(p, &mine[i].w) != 0)
            sleep_ms(1); /* queue bound reached: the workers catch up */
        if (i % 64 == 0)
            sleep_ms(0); /* let workers drain and go back to waiting */
    }
    return NULL;
}

Test(workpool, concurrent_submitters_lose_no_wakeup)
{
    weft_workpool *p = weft_workpool_new("burst", 3, 100);
    cr_assert_not_null(p);
    pthread_t t[SUBMITTERS];
    for (int i = 0; i < SUBMITTERS; i++)
        cr_assert_eq(pthread_create(&t[i], NULL, submit_burst, &p), 0);
    for (int i = 0; i < SUBMITTERS; i++)
        pthread_join(t[i], NULL);
    weft_workpool_stats s = wait_stats(p, 0, SUBMITTERS * PER_SUBMITTER);
    cr_assert_eq(s.completed, SUBMITTERS * PER_SUBMITTER);
    for (int k = 0; k < SUBMITTERS; k++)
        for (int i = 0; i < PER_SUBMITTER; i++)
            cr_assert_eq(atomic_load(&burst_jobs[k][i].ran), 1, "job %d/%d ran %d times", k, i,
                         atomic_load(&burst_jobs[k][i].ran));
    weft_workpool_free(p);
}

static void *open_later(void *arg)
{
    (void)arg;
    sleep_ms(50);
    gate_open(&g_gate);
    return NULL;
}

Test(workpool, free_drains_queued_work)
{
    weft_workpool *p = weft_workpool_new("drain", 1, 10);
    cr_assert_not_null(p);
    static job blocker, jobs[5];
    blocker.id = -1;
    blocker.w.run = blocked;
    cr_assert_eq(weft_workpool_submit(p, &blocker.w), 0);
    wait_stats(p, 1, 0);
    for (int i = 0; i < 5; i++) {
        jobs[i].id = i;
        jobs[i].w.run = record;
        cr_assert_eq(weft_workpool_submit(p, &jobs[i].w), 0);
    }
    /* free() is called while the worker is still held: it must wait, then
     * run the five queued jobs, before returning. */
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, open_later, NULL), 0);
    weft_workpool_free(p);
    cr_assert_eq(atomic_load(&n_ran), 6, "free returned with queued work not run (%d of 6)", atomic_load(&n_ran));
    for (int i = 0; i < 5; i++)
        cr_assert_eq(order[i + 1], i);
    pthread_join(t, NULL);
}

/* Threads start as work finds none free, never beyond size; a pool that
 * finished its work keeps its threads for the next. */
Test(workpool, threads_start_on_demand_up_to_size)
{
    weft_workpool *p = weft_workpool_new("grow", 3, 10);
    cr_assert_not_null(p);
    static job blockers[5];
    for (int i = 0; i < 5; i++) {
        blockers[i].id = i;
        blockers[i].w.run = blocked;
        cr_assert_eq(weft_workpool_submit(p, &blockers[i].w), 0);
        weft_workpool_stats s = wait_stats(p, i < 3 ? i + 1 : 3, 0);
        cr_assert_eq(s.started, i < 3 ? i + 1 : 3, "after %d jobs: %d threads", i + 1, s.started);
    }
    weft_workpool_stats s;
    weft_workpool_stats_get(p, &s);
    cr_assert_eq(s.queued, 2);
    gate_open(&g_gate);
    s = wait_stats(p, 0, 5);
    cr_assert_eq(s.started, 3);
    weft_workpool_free(p);
}

Test(workpool, free_idle_pool)
{
    weft_workpool *p = weft_workpool_new("idle", 8, 1);
    cr_assert_not_null(p);
    weft_workpool_free(p);
    weft_workpool_free(NULL);
}

/* A withdrawn request's job leaves the queue at once and never runs; one a
 * worker already holds cannot be taken back. */
Test(workpool, cancel_takes_back_only_queued_work)
{
    weft_workpool *p = weft_workpool_new("cancel", 1, 10);
    cr_assert_not_null(p);
    static job blocker, a, b, c;
    blocker.w.run = blocked;
    a.id = 1;
    a.w.run = record;
    b.id = 2;
    b.w.run = record;
    c.id = 3;
    c.w.run = record;
    cr_assert_eq(weft_workpool_submit(p, &blocker.w), 0);
    wait_stats(p, 1, 0);
    cr_assert_eq(weft_workpool_submit(p, &a.w), 0);
    cr_assert_eq(weft_workpool_submit(p, &b.w), 0);
    cr_assert_eq(weft_workpool_submit(p, &c.w), 0);
    cr_assert_eq(weft_workpool_cancel(p, &b.w), 0, "the middle of the queue");
    cr_assert_eq(weft_workpool_cancel(p, &c.w), 0, "the tail");
    cr_assert_eq(weft_workpool_cancel(p, &c.w), -1, "twice");
    cr_assert_eq(weft_workpool_cancel(p, &blocker.w), -1, "running work stays");
    weft_workpool_stats s;
    weft_workpool_stats_get(p, &s);
    cr_assert_eq(s.queued, 1);
    cr_assert_eq(s.withdrawn, 2);
    cr_assert_eq(weft_workpool_submit(p, &c.w), 0, "the tail pointer survived the removal");
    gate_open(&g_gate);
    s = wait_stats(p, 0, 3);
    cr_assert_eq(atomic_load(&a.ran), 1);
    cr_assert_eq(atomic_load(&b.ran), 0, "withdrawn work never runs");
    cr_assert_eq(atomic_load(&c.ran), 1);
    weft_workpool_free(p);
}
