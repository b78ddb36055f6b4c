#include "base/otlp.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/curl.h"
#include "base/log.h"
#include "base/signals.h"

/* Everything below `mu` is guarded by it; the counters are atomics so that
 * /metrics and the producers' fast refusal never take the lock. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake; /* on CLOCK_MONOTONIC, set up before the thread starts */
static weft_span **ring;
static size_t cap, head, count;
static char *endpoint, *service;
static int batch_size = 512, interval_ms = 1000, timeout_ms = 5000;
static int running, stopping, changed;
static pthread_t thread;

static atomic_int enabled;
static atomic_size_t queued, capacity;
static atomic_uint_fast64_t exported, dropped;

int weft_otlp_enabled(void) { return atomic_load_explicit(&enabled, memory_order_relaxed); }

uint64_t weft_otlp_unix_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void drop(uint64_t n) { atomic_fetch_add_explicit(&dropped, n, memory_order_relaxed); }

weft_span *weft_otlp_span_new(void)
{
    /* A full queue refuses before anything is allocated: a flood of
     * requests against a dead collector costs a load and an add each. */
    if (!weft_otlp_enabled())
        return NULL;
    if (atomic_load_explicit(&queued, memory_order_relaxed) >= atomic_load_explicit(&capacity, memory_order_relaxed)) {
        drop(1);
        return NULL;
    }
    weft_span *s = calloc(1, sizeof(*s));
    if (s == NULL)
        drop(1);
    return s;
}

void weft_otlp_submit(weft_span *s)
{
    if (s == NULL)
        return;
    pthread_mutex_lock(&mu);
    int ok = endpoint != NULL && count < cap;
    if (ok) {
        ring[(head + count) % cap] = s;
        count++;
        atomic_store_explicit(&queued, count, memory_order_relaxed);
        if (count == (size_t)batch_size)
            pthread_cond_signal(&wake);
    }
    pthread_mutex_unlock(&mu);
    if (!ok) {
        free(s);
        drop(1);
    }
}

weft_otlp_stats weft_otlp_stats_get(void)
{
    return (weft_otlp_stats){atomic_load_explicit(&exported, memory_order_relaxed),
                             atomic_load_explicit(&dropped, memory_order_relaxed),
                             atomic_load_explicit(&queued, memory_order_relaxed)};
}

/* Takes up to `max` spans out of the ring (mu held). */
static size_t take(weft_span **out, size_t max)
{
    size_t n = count < max ? count : max;
    for (size_t i = 0; i < n; i++)
        out[i] = ring[(head + i) % cap];
    head = cap > 0 ? (head + n) % cap : 0;
    count -= n;
    atomic_store_explicit(&queued, count, memory_order_relaxed);
    return n;
}

/* Shutdown ends a POST in flight at once (within libcurl's progress
 * interval, under a second) instead of waiting out a slow collector's
 * timeout_ms; the last flush that follows has a bound of its own. */
static atomic_int abort_posts;

static int on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    (void)arg, (void)dt, (void)dn, (void)ut, (void)un;
    return atomic_load_explicit(&abort_posts, memory_order_relaxed);
}

static size_t ignore_body(char *p, size_t size, size_t n, void *arg)
{
    (void)p;
    (void)arg;
    return size * n;
}

/* One POST: 0 when the collector took it (2xx), 1 when trying again may
 * work (no connection, a timeout, or 429/502/503/504, which OTLP/HTTP
 * names retryable), -1 when it will not (any other status). Logs only a
 * change of state, so a dead collector is one line, not one a second. */
static int post(CURL *curl, const char *url, const char *body, size_t len, int tmo)
{
    static int failing;
    struct curl_slist *hdrs = curl_slist_append(NULL, "Content-Type: application/json");
    /* No "Expect: 100-continue" (libcurl's default for a body past 1 KiB):
     * a round trip more per batch, or a second's wait on a collector that
     * never sends 100. */
    hdrs = curl_slist_append(hdrs, "Expect:");
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, (long)tmo);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L); /* no SIGALRM in a threaded server */
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, ignore_body);
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
    CURLcode rc = curl_easy_perform(curl);
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(hdrs);
    int ok = rc == CURLE_OK && status >= 200 && status < 300;
    if (!ok && !failing)
        weft_log_error("trace.otlp_endpoint %s: export failed (%s); a batch is tried 3 times, then its "
                       "spans are dropped and counted in weft_trace_spans_dropped_total",
                       url, rc != CURLE_OK ? curl_easy_strerror(rc) : status >= 400 ? "an HTTP error status" : "no answer");
    else if (ok && failing)
        weft_log_info("trace.otlp_endpoint %s: exporting again", url);
    failing = !ok;
    if (ok)
        return 0;
    int transient = rc != CURLE_OK ? !atomic_load_explicit(&abort_posts, memory_order_relaxed)
                                   : status == 429 || status == 502 || status == 503 || status == 504;
    return transient ? 1 : -1;
}

/* A batch that failed for a reason that may pass gets this many more
 * attempts, each after the back-off; a collector that restarts or a
 * moment's overload then loses nothing. While a batch waits for its retry,
 * new spans wait in the queue (or are dropped when it is full). */
#define EXPORT_RETRIES 2

static void free_spans(weft_span **batch, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(batch[i]);
}

/* 0 when the collector took the batch (its spans freed), 1 when it is to be
 * tried again (`tries` attempts made so far, spans kept), -1 when it was
 * dropped. */
static int export_batch(CURL *curl, weft_span **batch, size_t n, const char *url, const char *svc, int tmo, int tries)
{
    size_t len = 0;
    char *body = weft_otlp_encode(batch, n, svc, &len);
    int rc = body != NULL ? post(curl, url, body, len, tmo) : -1;
    free(body);
    if (rc == 1 && tries <= EXPORT_RETRIES)
        return 1;
    if (rc == 0)
        atomic_fetch_add_explicit(&exported, n, memory_order_relaxed);
    else
        drop(n);
    free_spans(batch, n);
    return rc == 0 ? 0 : -1;
}

/* After `fails` failed exports in a row the next waits this long, full
 * batch or not: a collector that is down must not cost a core encoding
 * batches it refuses (new spans meanwhile are dropped as the queue fills,
 * which costs a producer one atomic load). */
static int backoff_ms(int fails)
{
    long ms = (long)interval_ms << (fails < 8 ? fails : 8);
    return ms < 10000 ? (int)ms : 10000;
}

static void deadline_in(struct timespec *ts, int ms)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

/* Shutdown: the batch out and what is queued get one attempt, of 2 s at
 * most, in the order they were finished. Takes `batch`; mu held, released. */
static void export_last(CURL *curl, weft_span **batch, size_t n)
{
    atomic_store(&abort_posts, 0);
    weft_span **all = malloc((n + count + 1) * sizeof(*all));
    size_t total = 0;
    if (all != NULL) {
        for (size_t i = 0; i < n; i++)
            all[total++] = batch[i];
        total += take(all + total, count);
    } else {
        free_spans(batch, n);
        drop(n);
    }
    free(batch);
    char *url = endpoint != NULL ? strdup(endpoint) : NULL, *svc = strdup(service != NULL ? service : "weft");
    int tmo = timeout_ms < 2000 ? timeout_ms : 2000;
    pthread_mutex_unlock(&mu);
    if (total > 0 && url != NULL && svc != NULL && curl != NULL) {
        (void)export_batch(curl, all, total, url, svc, tmo, EXPORT_RETRIES + 1);
    } else {
        free_spans(all, total);
        drop(total);
    }
    free(all);
    free(url);
    free(svc);
}

static void *run(void *arg)
{
    (void)arg;
    CURL *curl = curl_easy_init(); /* one handle: its connection is kept alive between batches */
    /* The batch out of the ring: being sent, or waiting for its retry. */
    weft_span **batch = NULL;
    size_t n = 0;
    int tries = 0;
    pthread_mutex_lock(&mu);
    int fails = 0;
    while (!stopping) {
        struct timespec until;
        deadline_in(&until, fails > 0 ? backoff_ms(fails) : interval_ms);
        int backing_off = fails > 0;
        /* Wait for a full batch, or for the interval with something queued;
         * after a failure, for the back-off first. */
        while (!stopping && !changed && (backing_off || (n == 0 && count < (size_t)batch_size))) {
            int rc = pthread_cond_timedwait(&wake, &mu, &until);
            if (rc == ETIMEDOUT && (count > 0 || n > 0))
                break;
            if (rc == ETIMEDOUT) {
                backing_off = 0;
                deadline_in(&until, interval_ms);
            }
        }
        changed = 0;
        if (stopping)
            break;
        if (n == 0) {
            batch = malloc((size_t)batch_size * sizeof(*batch));
            n = batch != NULL ? take(batch, (size_t)batch_size) : 0;
            tries = 0;
        }
        char *url = endpoint != NULL ? strdup(endpoint) : NULL, *svc = strdup(service != NULL ? service : "weft");
        int tmo = timeout_ms;
        pthread_mutex_unlock(&mu);
        int rc = -1;
        if (n > 0 && (url == NULL || svc == NULL || curl == NULL)) {
            free_spans(batch, n);
            drop(n);
        } else if (n > 0) {
            rc = export_batch(curl, batch, n, url, svc, tmo, ++tries);
            fails = rc == 0 ? 0 : fails + 1;
        }
        if (rc != 1) {
            free(batch);
            batch = NULL;
            n = 0;
        }
        free(url);
        free(svc);
        pthread_mutex_lock(&mu);
    }
    export_last(curl, batch, n);
    if (curl != NULL)
        curl_easy_cleanup(curl);
    return NULL;
}

/* A new ring of `size`, keeping the oldest spans that fit (mu held). */
static int resize(size_t size)
{
    weft_span **fresh = calloc(size, sizeof(*fresh));
    if (fresh == NULL)
        return -1;
    size_t keep = count < size ? count : size;
    for (size_t i = 0; i < count; i++) {
        weft_span *s = ring[(head + i) % cap];
        if (i < keep)
            fresh[i] = s;
        else
            free(s);
    }
    drop(count - keep);
    free(ring);
    ring = fresh;
    cap = size;
    atomic_store(&capacity, size);
    head = 0;
    count = keep;
    atomic_store_explicit(&queued, count, memory_order_relaxed);
    return 0;
}

void weft_otlp_configure(const weft_otlp_settings *s)
{
    pthread_mutex_lock(&mu);
    free(endpoint);
    free(service);
    endpoint = s->endpoint != NULL ? strdup(s->endpoint) : NULL;
    service = strdup(s->service_name != NULL ? s->service_name : "weft");
    batch_size = s->batch_size > 0 ? s->batch_size : 512;
    interval_ms = s->batch_interval_ms > 0 ? s->batch_interval_ms : 1000;
    timeout_ms = s->timeout_ms > 0 ? s->timeout_ms : 5000;
    size_t want = s->queue_size > 0 ? (size_t)s->queue_size : 2048;
    if (endpoint == NULL) {
        /* Stopped exporting: nothing queued will ever go out. */
        weft_span *gone[64];
        size_t n;
        while ((n = take(gone, 64)) > 0) {
            for (size_t i = 0; i < n; i++)
                free(gone[i]);
            drop(n);
        }
    } else if (want != cap && resize(want) != 0) {
        weft_log_error("trace: out of memory for a queue of %zu spans; keeping %zu", want, cap);
    }
    int start = endpoint != NULL && !running && cap > 0;
    char why[512];
    if (start && weft_curl_load(why, sizeof(why)) != 0) {
        weft_log_error("trace.otlp_endpoint %s: %s; spans are not exported", endpoint, why);
        start = 0;
    }
    if (start) {
        /* Timed waits on the monotonic clock: a deadline on the default
         * (wall) clock computed from the monotonic one is always past, and
         * the thread would spin; a wall clock set back would stall it. */
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&wake, &ca);
        pthread_condattr_destroy(&ca);
    }
    changed = 1;
    if (running || start)
        pthread_cond_signal(&wake);
    atomic_store(&enabled, endpoint != NULL && cap > 0 && (running || start));
    if (start) {
        curl_global_init(CURL_GLOBAL_DEFAULT);
        /* Born with SIGTERM and friends blocked: they are the main thread's. */
        sigset_t old;
        pthread_sigmask(SIG_BLOCK, NULL, &old);
        weft_signals_block_async();
        running = pthread_create(&thread, NULL, run, NULL) == 0;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (!running) {
            weft_log_error("trace: cannot start the exporter thread; spans are not exported");
            atomic_store(&enabled, 0);
        }
    }
    pthread_mutex_unlock(&mu);
}

void weft_otlp_shutdown(void)
{
    pthread_mutex_lock(&mu);
    int was = running;
    stopping = 1;
    atomic_store(&abort_posts, 1);
    atomic_store(&enabled, 0);
    if (was)
        pthread_cond_signal(&wake);
    pthread_mutex_unlock(&mu);
    if (was) {
        pthread_join(thread, NULL);
        curl_global_cleanup();
    }
    pthread_mutex_lock(&mu);
    weft_span *gone[64];
    size_t n;
    while ((n = take(gone, 64)) > 0)
        for (size_t i = 0; i < n; i++)
            free(gone[i]);
    free(ring);
    ring = NULL;
    cap = head = count = 0;
    atomic_store(&capacity, 0);
    free(endpoint);
    free(service);
    endpoint = service = NULL;
    running = stopping = 0;
    pthread_mutex_unlock(&mu);
}
