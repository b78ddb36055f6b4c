#include "process/privileges.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "plugin/module.h"

int weft_privileges_drop(const weft_config *cfg)
{
    if (cfg->user == NULL)
        return 0;
    struct passwd *pw = getpwnam(cfg->user);
    if (pw == NULL) {
        weft_log_error("%s: user '%s' does not exist", cfg->path, cfg->user);
        return -1;
    }
    if (geteuid() != 0) {
        if (geteuid() != pw->pw_uid)
            weft_log_warn("%s: user = \"%s\", but weft was not started as root: staying uid %u", cfg->path, cfg->user,
                          (unsigned)geteuid());
        return 0;
    }
    /* The plugin copies of later reloads go where this process can write. */
    weft_module_chown_private(pw->pw_uid, pw->pw_gid);
    /* glibc applies set*id to every thread of the process (worker pools
     * already run), so no thread keeps root. Groups first, uid last. */
    if (initgroups(pw->pw_name, pw->pw_gid) != 0 || setgid(pw->pw_gid) != 0 || setuid(pw->pw_uid) != 0) {
        weft_log_error("cannot switch to user %s: %s", cfg->user, strerror(errno));
        return -1;
    }
    if (setuid(0) == 0) {
        weft_log_error("switched to user %s but could regain root: refusing to run", cfg->user);
        return -1;
    }
    weft_log_info("running as user %s (uid %u) after binding the listeners", cfg->user, (unsigned)pw->pw_uid);
    return 0;
}
