/*
 * libFuzzer target: plugin descriptor checks.
 *
 * Input: byte 0 chooses the expected name (NULL or "x") and what the `name`
 * field points to; the rest are the descriptor's bytes, copied into a heap
 * buffer of exactly that size so AddressSanitizer reports any read past
 * `size_avail`. weft_descriptor_check must refuse or accept without crashing,
 * explain every refusal, and accept only what the loader may use: the right
 * magic, ABI (2, or 1 through the compatibility table), flags, a size within
 * what is readable, a valid name and a handler.
 *
 * The `name` field is a pointer, and the checker follows it (strlen, then a
 * character check) once the size covers it. Arbitrary bytes there are an
 * arbitrary address: following it crashes (docs/RELIABILITY.md, open
 * findings; corpus/fuzz_descriptor/crash-garbage-name-pointer reproduces it
 * with WEFT_FUZZ_RAW_NAME=1). A descriptor comes from code already running in the
 * process, so this target fuzzes everything except that pointer: when the
 * buffer covers `name`, it is replaced by NULL or by a pointer to a
 * NUL-terminated string taken from the input, chosen by byte 0. Other pointer
 * fields (version, description, functions) are never followed by the check
 * and keep their fuzzed bytes.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/module.h"
#include "base/names.h"

#define CHECK(cond)                                                                                                    \
    do {                                                                                                               \
        if (!(cond))                                                                                                   \
            __builtin_trap();                                                                                          \
    } while (0)

static int raw_name; /* WEFT_FUZZ_RAW_NAME=1: leave the name pointer as fuzzed (reproduces the crash) */

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *e = getenv("WEFT_FUZZ_RAW_NAME");
    raw_name = e != NULL && e[0] == '1';
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    uint8_t mode = data[0];
    const uint8_t *bytes = data + 1;
    size_t n = size - 1;
    uint8_t *desc = malloc(n > 0 ? n : 1);
    CHECK(desc != NULL);
    memcpy(desc, bytes, n);

    /* The name: NULL, or the bytes after the descriptor's own struct (or a
     * fixed valid name when the input is too short to carry one). */
    char name_buf[80];
    const char *name = NULL;
    if (mode & 1) {
        size_t at = n > sizeof(weft_plugin) ? sizeof(weft_plugin) : n;
        size_t len = n - at < sizeof(name_buf) - 1 ? n - at : sizeof(name_buf) - 1;
        memcpy(name_buf, bytes + at, len);
        name_buf[len] = '\0';
        name = len > 0 ? name_buf : "x";
    }
    if (!raw_name && n >= offsetof(weft_plugin, name) + sizeof(const char *))
        memcpy(desc + offsetof(weft_plugin, name), &name, sizeof(name));

    const char *expected = (mode & 2) ? "x" : NULL;
    char why[1024];
    why[0] = '\0';
    int rc = weft_descriptor_check(n > 0 || (mode & 4) ? desc : NULL, n, expected, why, sizeof(why));
    if (rc != 0) {
        CHECK(rc == -1 && why[0] != '\0' && strlen(why) < sizeof(why));
    } else {
        CHECK(n >= WEFT_PLUGIN_MIN_SIZE);
        weft_plugin d = {0};
        memcpy(&d, desc, n < sizeof(d) ? n : sizeof(d));
        /* ABI 2, or ABI 1 (served through the compatibility table). */
        CHECK(d.magic == WEFT_PLUGIN_MAGIC && (d.abi_version == WEFT_PLUGIN_ABI || d.abi_version == 1) && d.flags == 0);
        CHECK(d.struct_size >= WEFT_PLUGIN_MIN_SIZE && d.struct_size <= n);
        CHECK(d.name != NULL && weft_name_is_valid(d.name));
        CHECK(expected == NULL || strcmp(d.name, expected) == 0);
        CHECK(d.handle != NULL || d.handle_async != NULL);
    }
    free(desc);
    return 0;
}
