/*
 * Fixture: a well-formed descriptor built for the next plugin ABI. The loader
 * must refuse it by name, saying both ABI numbers, before calling anything.
 */
#include <weft/plugin.h>

static weft_rc wrong_abi_handle(weft_req *req, void *state)
{
    (void)req;
    (void)state;
    return WEFT_ERROR; /* never called */
}

static const weft_plugin wrong_abi_plugin = {
    WEFT_PLUGIN_HEADER,
    .abi_version = WEFT_PLUGIN_ABI + 1, /* overrides the header's value */
    .name = "wrong_abi",
    .version = "0.0.1",
    .description = "test fixture: built against a future plugin ABI",
    .handle = wrong_abi_handle,
};

const weft_plugin *weft_plugin_entry(void)
{
    return &wrong_abi_plugin;
}
