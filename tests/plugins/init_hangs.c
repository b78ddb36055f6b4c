/* Fixture: init never returns. The probe child is killed at its deadline. */
#include <unistd.h>
#include <weft/plugin.h>

static int init_hangs_init(const weft_host *host, weft_init *ctx, void **state)
{
    (void)host;
    (void)ctx;
    *state = NULL;
    for (;;)
        pause();
    return WEFT_OK;
}

static int init_hangs_handle(weft_req *req, void *state)
{
    (void)req;
    (void)state;
    return WEFT_OK;
}

static const weft_plugin init_hangs_plugin = {
    WEFT_PLUGIN_HEADER,
    .name = "init_hangs",
    .version = "0.0.2",
    .description = "test fixture: init never returns",
    .init = init_hangs_init,
    .handle = init_hangs_handle,
};

WEFT_EXPORT const weft_plugin *weft_plugin_entry(void) { return &init_hangs_plugin; }
