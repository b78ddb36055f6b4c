#include "base/signals.h"

#include <pthread.h>
#include <signal.h>

void weft_signals_block_async(void)
{
    sigset_t set;
    sigfillset(&set);
    static const int faults[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP};
    for (unsigned i = 0; i < sizeof(faults) / sizeof(faults[0]); i++)
        sigdelset(&set, faults[i]);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
}
