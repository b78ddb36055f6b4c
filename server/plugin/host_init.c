/* The `init` group: route_init.c's option readers under API 2 names. */
#include "plugin/host.h"
#include "plugin/route_init.h"

const weft_host_init weft_host_init_group = {
    .struct_size = sizeof(weft_host_init),
    .version = WEFT_HOST_INIT_VERSION,
    .route = weft_route_init_init_route,
    .plugin_state = weft_route_init_init_plugin_state,
    .opt_string = weft_route_init_opt_string,
    .opt_int = weft_route_init_opt_int,
    .opt_float = weft_route_init_opt_float,
    .opt_bool = weft_route_init_opt_bool,
    .error = weft_route_init_init_error,
};
