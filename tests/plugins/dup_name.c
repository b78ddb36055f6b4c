/*
 * Fixture: lives in dup_name.so but declares the name "hello", as a copied
 * plugin whose name was never changed would. The loader must refuse it.
 */
#include <weft/plugin.h>

static int dup_name_handle(weft_req *req, void *state)
{
    (void)req;
    (void)state;
    return WEFT_ERROR; /* never called */
}

static const weft_plugin dup_name_plugin = {
    WEFT_PLUGIN_HEADER,
    .name = "hello",
    .version = "0.0.1",
    .description = "test fixture: declares another plugin's name",
    .handle = dup_name_handle,
};

const weft_plugin *weft_plugin_entry(void)
{
    return &dup_name_plugin;
}
