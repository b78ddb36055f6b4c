/*
 * libFuzzer target: the config loader and validator.
 *
 * Input: the text of a config file. weft_config_load_text must either return
 * a config or NULL with at least one message, every message naming the file;
 * never crash, never leak (LeakSanitizer runs after every input); and every
 * integer setting libconfig read is matched to its literal in the text.
 *
 * The text is NUL-terminated at its first NUL, as a file read by slurp() and
 * handed to libconfig would be. Inputs that mention "include" are skipped:
 * libconfig's @include reads other files (even /dev/stdin or a FIFO), which
 * is an operator feature, not input parsing, and would make the fuzzer's
 * results depend on the machine it runs on.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/config.h"
#include "base/errors.h"
#include "base/log.h"

#define CHECK(cond)                                                                                                    \
    do {                                                                                                               \
        if (!(cond))                                                                                                   \
            __builtin_trap();                                                                                          \
    } while (0)

/* Relative paths in the config (plugin_dirs, pid_file, @include) resolve
 * against a directory that does not exist. */
#define FUZZ_PATH "/nonexistent-weft-fuzz/weft.conf"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    weft_log_set_level(WEFT_LOG_ERROR); /* the validator logs nothing itself; keep it that way */
    return 0;
}

/*
 * config/intlit.c tokenises the text as libconfig does: its message for a
 * setting matched to no literal means the two disagree (the text is not
 * edited here). Recognised by its shape -- FILE:LINE: then a setting path,
 * which holds no user text -- since a string setting's value may contain
 * the same words.
 */
static int unmatched_integer(const char *msg)
{
    const char *p = msg + strlen(FUZZ_PATH);
    if (strncmp(msg, FUZZ_PATH ":", strlen(FUZZ_PATH) + 1) != 0)
        return 0;
    p += 1 + strspn(p + 1, "0123456789");
    if (strncmp(p, ": an integer libconfig did not read", 35) == 0)
        return 1;
    p += 2 + strspn(p + 2, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-*.[]");
    return strncmp(p, ": this integer", 14) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    CHECK(text != NULL);
    memcpy(text, data, size);
    text[size] = '\0';
    if (strcasestr(text, "include") != NULL) {
        free(text);
        return -1; /* not added to the corpus */
    }
    weft_errors errs = {0};
    weft_config *cfg = weft_config_load_text(FUZZ_PATH, text, &errs);
    if (cfg == NULL) {
        CHECK(errs.count > 0);
    } else {
        CHECK(errs.count == 0);
        CHECK(cfg->threads >= 1 && cfg->threads <= 1024);
        CHECK(cfg->n_listen >= 1);
        for (size_t i = 0; i < cfg->n_pools; i++)
            CHECK(cfg->pools[i].name != NULL && cfg->pools[i].size >= 1 && cfg->pools[i].queue >= 0);
        for (size_t i = 0; i < cfg->n_routes; i++) {
            const weft_route_cfg *r = &cfg->routes[i];
            CHECK(r->path != NULL && r->path[0] == '/' && r->plugin != NULL);
            CHECK(r->methods != 0);
            /* a plugin name never carries a path: it becomes "<dir>/<name>.so" */
            CHECK(strchr(r->plugin, '/') == NULL && strstr(r->plugin, "..") == NULL);
            if (r->dispatch == WEFT_DISPATCH_POOL)
                CHECK(r->pool != NULL && weft_config_find_pool(cfg, r->pool) != NULL);
        }
        for (size_t i = 0; i < cfg->n_plugin_dirs; i++)
            CHECK(cfg->plugin_dirs[i] != NULL && cfg->plugin_dirs[i][0] == '/');
    }
    for (size_t i = 0; i < errs.count; i++) {
        CHECK(errs.msgs[i] != NULL && strstr(errs.msgs[i], FUZZ_PATH) != NULL);
        CHECK(!unmatched_integer(errs.msgs[i]));
    }
    weft_errors_clear(&errs);
    weft_config_free(cfg);
    free(text);
    return 0;
}
