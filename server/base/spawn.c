#include "base/spawn.h"

#include <signal.h>
#include <spawn.h>

int weft_spawn(pid_t *pid, const char *path, char *const argv[], char *const envp[], const int *from,
               const int *to, size_t n_moves, int close_from)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    int rc = posix_spawn_file_actions_init(&fa);
    if (rc != 0)
        return rc;
    for (size_t i = 0; rc == 0 && i < n_moves; i++)
        rc = posix_spawn_file_actions_adddup2(&fa, from[i], to[i]);
    if (rc == 0)
        rc = posix_spawn_file_actions_addclosefrom_np(&fa, close_from);
    if (rc == 0 && (rc = posix_spawnattr_init(&attr)) == 0) {
        sigset_t none, dfl;
        sigemptyset(&none);
        sigemptyset(&dfl);
        sigaddset(&dfl, SIGPIPE);
        posix_spawnattr_setsigmask(&attr, &none);
        posix_spawnattr_setsigdefault(&attr, &dfl);
        posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
        rc = posix_spawn(pid, path, &fa, &attr, argv, envp);
        posix_spawnattr_destroy(&attr);
    }
    posix_spawn_file_actions_destroy(&fa);
    return rc;
}
