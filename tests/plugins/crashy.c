/* Fixture: a handler that dereferences NULL on ?crash=1 and answers
 * "fine" otherwise, under every policy (blocking and reactive entry points). */
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

static const weft_host *host;

static int crashy_init(const weft_host *h, weft_init *ctx, void **state)
{
    (void)ctx;
    host = h;
    *state = NULL;
    return WEFT_OK;
}

static int answer(weft_req *req)
{
    if (host->req_query(req, "crash") != NULL) {
        *null_struct_member() = 1;
    }
    host->res_printf(req, "fine\n");
    return WEFT_OK;
}

static int crashy_handle(weft_req *req, void *state)
{
    (void)state;
    return answer(req);
}

static int crashy_handle_async(weft_req *req, void *state)
{
    (void)state;
    return answer(req);
}

static const weft_plugin crashy_plugin = {
    WEFT_PLUGIN_HEADER,
    .name = "crashy",
    .version = "3.1.4",
    .description = "test fixture: the handler segfaults on ?crash=1",
    .init = crashy_init,
    .handle = crashy_handle,
    .handle_async = crashy_handle_async,
};

WEFT_EXPORT const weft_plugin *weft_plugin_entry(void) { return &crashy_plugin; }
