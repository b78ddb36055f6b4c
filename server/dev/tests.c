#include "dev/tests.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/file.h"
#include "base/log.h"
#include "base/signals.h"
#include "base/timer.h"

/* A run that takes longer is killed and reported: a hung test must not
 * hold every later run back. */
#define RUN_LIMIT_NS (120 * 1000000000ull)

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int wanted[WEFT_DEV_MAX_PROJECTS];
static int stopping, started;
static int paused, full_output; /* the terminal's p and o keys */
static pthread_t thread;
static const weft_dev_dirs *dirs;

int weft_dev_has_tests(const weft_dev_project *p)
{
    char path[PATH_MAX + 16];
    struct stat st;
    return weft_dev_format(path, sizeof(path), "tests path", "%s/tests", p->dir) == 0 && stat(path, &st) == 0 &&
           S_ISDIR(st.st_mode) && weft_dev_format(path, sizeof(path), "Makefile path", "%s/Makefile", p->dir) == 0 &&
           stat(path, &st) == 0;
}

void weft_dev_tests_request(int i)
{
    weft_dev_project *p = weft_dev_project_at(i);
    if (!weft_dev_has_tests(p))
        return;
    weft_dev_lock();
    if (p->test_state != WEFT_DEV_TESTS_RUNNING)
        p->test_state = WEFT_DEV_TESTS_QUEUED;
    weft_dev_unlock();
    pthread_mutex_lock(&mu);
    wanted[i] = 1;
    int held = paused;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
    if (held)
        weft_log_info("dev: tests of %s wait: testing is paused (p resumes)", p->name);
}

void weft_dev_tests_request_all(void)
{
    weft_dev_lock();
    int n = weft_dev_n_projects();
    weft_dev_unlock();
    for (int i = 0; i < n; i++)
        weft_dev_tests_request(i);
}

int weft_dev_tests_toggle_pause(void)
{
    pthread_mutex_lock(&mu);
    int now = paused = !paused;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
    return now;
}

int weft_dev_tests_toggle_output(void)
{
    pthread_mutex_lock(&mu);
    int now = full_output = !full_output;
    pthread_mutex_unlock(&mu);
    return now;
}

static int should_stop(void)
{
    pthread_mutex_lock(&mu);
    int s = stopping;
    pthread_mutex_unlock(&mu);
    return s;
}

/* `make -C DIR test WEFT=<this weft> O=<out>` in its own process group, output into log: the
 * builds go to `out`, never into the project, where the author's own make would take them. */
static pid_t spawn_make(const char *dir, const char *out_dir, const char *log)
{
    char self[PATH_MAX], weft[PATH_MAX + 8], o[PATH_MAX + 8];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0)
        return -1;
    self[n] = '\0';
    if (weft_dev_format(weft, sizeof(weft), "weft path", "WEFT=%s", self) != 0 ||
        weft_dev_format(o, sizeof(o), "test build path", "O=%s", out_dir) != 0)
        return -1;
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    setpgid(0, 0);
    /* weft's threads block the signals its control thread takes by signalfd;
     * make, the compiler and the tests must not inherit that. */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    /* Criterion's sandbox, when weft dev itself runs under a Criterion test: the project's tests need their own. */
    unsetenv("BXFI_MAP");
    int out = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    int in = open("/dev/null", O_RDONLY);
    if (out < 0 || in < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0)
        _exit(126);
    execlp("make", "make", "--no-print-directory", "-C", dir, "test", weft, o, (char *)NULL);
    _exit(127);
}

/* Waits for the run; kills its process group at the limit or on stop. Returns the wait status, -1 if killed. */
static int wait_run(pid_t pid)
{
    uint64_t deadline = weft_now_ns() + RUN_LIMIT_NS;
    for (;;) {
        int status;
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            return status;
        if (r < 0 && errno != EINTR)
            return -1;
        if (weft_now_ns() > deadline || should_stop()) {
            kill(-pid, SIGKILL);
            waitpid(pid, &status, 0);
            return -1;
        }
        struct timespec ts = {0, 20 * 1000000};
        nanosleep(&ts, NULL);
    }
}

void weft_dev_tests_summarize(const char *out, char *summary, size_t size, char **failures)
{
    /* One closing line per Criterion binary `make test` ran: the sum of them. */
    int tested = -1, passing = 0, failing = 0, crashing = 0;
    for (const char *syn = strstr(out, "Synthesis: Tested: "); syn != NULL;
         syn = strstr(syn + 1, "Synthesis: Tested: ")) {
        int t = 0, p = 0, f = 0, c = 0;
        if (sscanf(syn, "Synthesis: Tested: %d | Passing: %d | Failing: %d | Crashing: %d", &t, &p, &f, &c) < 1)
            continue;
        tested = (tested < 0 ? 0 : tested) + t;
        passing += p;
        failing += f;
        crashing += c;
    }
    size_t len = 0;
    FILE *f = open_memstream(failures, &len);
    for (const char *l = out; f != NULL && l != NULL && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        size_t n = strcspn(l, "\n");
        if (strncmp(l, "[----]", 6) == 0 || strncmp(l, "[FAIL]", 6) == 0 || memmem(l, n, "rror", 4) != NULL)
            fprintf(f, "%.*s\n", (int)n, l);
    }
    if (f != NULL)
        fclose(f);
    if (tested < 0)
        snprintf(summary, size, "did not run (see the output)");
    else
        snprintf(summary, size, "%d passed, %d failed%s of %d", passing, failing + crashing,
                 crashing ? " (some crashed)" : "", tested);
}

static void run(int i)
{
    weft_dev_project *p = weft_dev_project_at(i);
    char log[PATH_MAX + 80], outdir[PATH_MAX + 80];
    if (weft_dev_format(log, sizeof(log), "test log path", "%s/%s.test.log", dirs->build, p->name) != 0 ||
        weft_dev_format(outdir, sizeof(outdir), "test build path", "%s/test-%s", dirs->build, p->name) != 0)
        return;
    weft_dev_lock();
    p->test_state = WEFT_DEV_TESTS_RUNNING;
    weft_dev_unlock();
    uint64_t t0 = weft_now_ns();
    pid_t pid = spawn_make(p->dir, outdir, log);
    int status = pid > 0 ? wait_run(pid) : -1;
    double secs = (double)(weft_now_ns() - t0) / 1e9;
    char *out = weft_file_read(log, NULL);
    char summary[sizeof(p->test_summary)], *failures = NULL;
    weft_dev_tests_summarize(out != NULL ? out : "", summary, sizeof(summary), &failures);
    int ok = status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (status < 0)
        snprintf(summary, sizeof(summary), "stopped after %.0f s", secs);
    weft_dev_lock();
    p->test_state = ok ? WEFT_DEV_TESTS_PASSED : WEFT_DEV_TESTS_FAILED;
    snprintf(p->test_summary, sizeof(p->test_summary), "%s", summary);
    free(p->test_output);
    /* Failing with no failure lines (a compile error in the test): all of it. */
    p->test_output = ok || (failures != NULL && failures[0]) ? failures : strdup(out != NULL ? out : "");
    if (p->test_output != failures)
        free(failures);
    p->tests_at = time(NULL);
    p->test_runs++;
    weft_dev_unlock();
    pthread_mutex_lock(&mu);
    int full = full_output;
    pthread_mutex_unlock(&mu);
    if (full)
        weft_log_info("dev: tests of %s: %s (%.1f s); their output:\n%s", p->name, summary, secs,
                      out != NULL ? out : "");
    else if (ok)
        weft_log_info("dev: tests of %s: %s (%.1f s)", p->name, summary, secs);
    else
        weft_log_warn("dev: tests of %s: %s (%.1f s); the build is served all the same\n%s", p->name, summary, secs,
                      p->test_output != NULL ? p->test_output : "");
    free(out);
}

static void *test_main(void *arg)
{
    (void)arg;
    weft_signals_block_async();
    for (;;) {
        int next = -1;
        pthread_mutex_lock(&mu);
        while (!stopping && next < 0) {
            for (int i = 0; !paused && i < WEFT_DEV_MAX_PROJECTS && next < 0; i++)
                if (wanted[i])
                    next = i;
            if (next < 0)
                pthread_cond_wait(&cv, &mu);
        }
        if (stopping) {
            pthread_mutex_unlock(&mu);
            return NULL;
        }
        wanted[next] = 0;
        pthread_mutex_unlock(&mu);
        run(next);
    }
}

void weft_dev_tests_start(const weft_dev_dirs *d)
{
    dirs = d;
    started = pthread_create(&thread, NULL, test_main, NULL) == 0;
    if (!started)
        weft_log_error("dev: cannot start the test thread; tests do not run on save");
}

void weft_dev_tests_stop(void)
{
    if (!started)
        return;
    pthread_mutex_lock(&mu);
    stopping = 1;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
    pthread_join(thread, NULL);
    started = 0;
}
