/* Fixture: init dereferences NULL. The probe child must die of it, never
 * the server. */
#include <stdint.h>
#include <weft/plugin.h>

/* A field at offset 16 of a NULL struct pointer: a real SIGSEGV, which
 * UBSan's null check (it looks at NULL itself) does not pre-empt in the
 * sanitizer build. */
static volatile int *null_struct_member(void)
{
    static volatile uintptr_t offset = 16;
    return (volatile int *)offset;
}

static int init_crash_init(const weft_host *host, weft_init *ctx, void **state)
{
    (void)host;
    (void)ctx;
    *state = NULL;
    return *null_struct_member();
}

static int init_crash_handle(weft_req *req, void *state)
{
    (void)req;
    (void)state;
    return WEFT_OK;
}

static const weft_plugin init_crash_plugin = {
    WEFT_PLUGIN_HEADER,
    .name = "init_crash",
    .version = "0.0.1",
    .description = "test fixture: init segfaults",
    .init = init_crash_init,
    .handle = init_crash_handle,
};

WEFT_EXPORT const weft_plugin *weft_plugin_entry(void) { return &init_crash_plugin; }
