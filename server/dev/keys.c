#include "dev/keys.h"

#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <termios.h>
#include <unistd.h>

#include "base/log.h"
#include "base/signals.h"
#include "dev/tests.h"

static struct termios saved;
static int raw;
static atomic_int stopping;
static pthread_t reader;
static int started;

static const char help[] = "dev: keys: r re-runs the tests, p pauses/resumes them, o toggles their whole output, "
                           "h this help; Ctrl-C stops";

static void key(char c)
{
    switch (c) {
    case 'r':
        weft_log_info("dev: re-running every project's tests");
        weft_dev_tests_request_all();
        break;
    case 'p':
        weft_log_info(weft_dev_tests_toggle_pause() ? "dev: continuous testing paused (p resumes)"
                                                    : "dev: continuous testing resumed");
        break;
    case 'o':
        weft_log_info(weft_dev_tests_toggle_output() ? "dev: test runs show their whole output (o: failures only)"
                                                     : "dev: test runs show their failures only (o: whole output)");
        break;
    case 'h':
    case '?': weft_log_info("%s", help); break;
    default: break;
    }
}

static void *read_main(void *arg)
{
    (void)arg;
    weft_signals_block_async();
    /* Polled: a read blocked on the terminal could not be told to stop. */
    while (!atomic_load(&stopping)) {
        struct pollfd p = {STDIN_FILENO, POLLIN, 0};
        if (poll(&p, 1, 100) <= 0)
            continue;
        char c;
        if (read(STDIN_FILENO, &c, 1) != 1)
            break; /* the terminal went away */
        key(c);
    }
    return NULL;
}

void weft_dev_keys_start(void)
{
    if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &saved) != 0)
        return;
    struct termios t = saved;
    t.c_lflag &= (tcflag_t) ~(ICANON | ECHO);
    t.c_cc[VMIN] = 1;
    t.c_cc[VTIME] = 0;
    raw = tcsetattr(STDIN_FILENO, TCSANOW, &t) == 0;
    started = pthread_create(&reader, NULL, read_main, NULL) == 0;
    if (started)
        weft_log_info("%s", help);
}

void weft_dev_keys_stop(void)
{
    if (started) {
        atomic_store(&stopping, 1);
        pthread_join(reader, NULL);
        started = 0;
    }
    if (raw)
        tcsetattr(STDIN_FILENO, TCSANOW, &saved);
    raw = 0;
}
