#include "process/hold.h"

#include <stdio.h>
#include <sys/stat.h>
#include <time.h>

#include "base/log.h"

/* What was last logged: 0 nothing held, 1 held, 2 stale. */
static int said;

int weft_hold_active(const char *pid_file)
{
    if (pid_file == NULL)
        return 0;
    char path[4096];
    snprintf(path, sizeof(path), "%s.hold", pid_file);
    struct stat st;
    int state = 0;
    if (stat(path, &st) == 0)
        state = time(NULL) - st.st_mtime <= WEFT_HOLD_MAX_S ? 1 : 2;
    if (state != said) {
        if (state == 1)
            weft_log_info("plugin hot swaps held while %s exists (a package upgrade is unpacking; the new "
                          "process loads the new files)", path);
        else if (state == 2)
            weft_log_warn("%s is over %d s old, a leftover of an upgrade that did not finish: ignored, plugin "
                          "changes swap in again (remove the file)", path, WEFT_HOLD_MAX_S);
        else if (said == 1)
            weft_log_info("plugin hot swap hold released (%s removed)", path);
        said = state;
    }
    return state == 1;
}
