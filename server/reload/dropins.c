#include "reload/dropins.h"

#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "config/route_files.h"
#include "plugin/module.h"

static int starts_with_file(const char *msg, const char *file)
{
    size_t n = strlen(file);
    return strncmp(msg, file, n) == 0 && msg[n] == ':';
}

/* -1: the main config (or unknown); -2: not said (the loader's "plugin 'x'
 * (...): ..." line, owned by the route line that follows it); else the
 * index of the fragment in cfg->route_files. */
static long owner_of(const weft_config *cfg, const char *msg)
{
    if (starts_with_file(msg, cfg->path))
        return -1;
    for (size_t i = 0; i < cfg->n_route_files; i++)
        if (starts_with_file(msg, cfg->route_files[i]->path))
            return (long)i;
    return msg[0] == '/' ? -1 : -2;
}

size_t weft_dropins_blame(const weft_config *cfg, const weft_errors *errs, size_t from, weft_refusal **out)
{
    *out = NULL;
    size_t n = errs->count > from ? errs->count - from : 0;
    if (n == 0)
        return 0;
    long *owner = calloc(n, sizeof(*owner));
    if (owner == NULL)
        weft_fatal("out of memory");
    for (size_t i = 0; i < n; i++) {
        const char *m = errs->msgs[from + i];
        /* Indented lines continue the one before (the probe child's output). */
        owner[i] = m[0] == ' ' ? (i > 0 ? owner[i - 1] : -1) : owner_of(cfg, m);
    }
    for (size_t i = n; i-- > 0;)
        if (owner[i] == -2)
            owner[i] = i + 1 < n ? owner[i + 1] : -1;
    int main_fails = 0;
    for (size_t i = 0; i < n; i++)
        main_fails |= owner[i] < 0;
    size_t count = 0;
    for (size_t f = 0; !main_fails && f < cfg->n_route_files; f++) {
        size_t first = n;
        char *reason = NULL;
        for (size_t i = 0; i < n; i++)
            if (owner[i] == (long)f) {
                const char *m = errs->msgs[from + i];
                size_t len = reason != NULL ? strlen(reason) : 0;
                char *grown = realloc(reason, len + strlen(m) + 3);
                if (grown == NULL)
                    weft_fatal("out of memory");
                reason = grown;
                if (first == n)
                    reason[0] = '\0';
                else
                    strcat(reason, "; ");
                strcat(reason, m);
                first = i;
            }
        if (reason == NULL)
            continue;
        weft_refusal *grown = realloc(*out, (count + 1) * sizeof(*grown));
        if (grown == NULL || (grown[count].file = strdup(cfg->route_files[f]->path)) == NULL)
            weft_fatal("out of memory");
        grown[count++].reason = reason;
        *out = grown;
    }
    free(owner);
    return count;
}

weft_generation *weft_dropins_build(const char *path, const char *text, const weft_config *serving,
                                    unsigned long id, int check_only, weft_config_vet *vet, void *vet_ctx,
                                    weft_errors *errs)
{
    weft_dropin_policy policy = {.any = serving == NULL};
    if (serving != NULL) {
        policy.known = serving->refused;
        policy.n_known = serving->n_refused;
    }
    weft_refusal *skip = NULL;
    size_t n_skip = 0;
    weft_generation *gen = NULL;
    /* Each round leaves out at least one more file, read no more: it ends. */
    for (;;) {
        policy.skip = skip;
        policy.n_skip = n_skip;
        weft_config *cfg = weft_config_load_dropins(path, text, &policy, errs);
        if (cfg == NULL)
            break;
        if (vet != NULL && vet(cfg, errs, vet_ctx) != 0) {
            weft_config_free(cfg);
            break;
        }
        size_t before = errs->count;
        if ((gen = weft_generation_build(cfg, id, check_only, errs)) != NULL)
            break;
        weft_refusal *blamed = NULL;
        size_t n = weft_dropins_blame(cfg, errs, before, &blamed);
        int allowed = n > 0;
        for (size_t i = 0; i < n; i++)
            allowed = allowed && weft_dropin_policy_allows(&policy, blamed[i].file);
        weft_config_free(cfg);
        if (!allowed) {
            weft_refusals_free(blamed, n);
            break;
        }
        weft_errors_truncate(errs, before);
        weft_refusal *grown = realloc(skip, (n_skip + n) * sizeof(*grown));
        if (grown == NULL)
            weft_fatal("out of memory");
        skip = grown;
        memcpy(skip + n_skip, blamed, n * sizeof(*blamed));
        n_skip += n;
        free(blamed);
    }
    weft_refusals_free(skip, n_skip);
    return gen;
}
