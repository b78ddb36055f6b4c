/* The trace group: W3C trace context and OTLP span export. */
#include <stdlib.h>
#include <string.h>

#include "config/schema.h"

static int endpoint_ok(const char *url)
{
    const char *rest = strncmp(url, "http://", 7) == 0 ? url + 7 : strncmp(url, "https://", 8) == 0 ? url + 8 : NULL;
    if (rest == NULL || *rest == '\0' || *rest == '/')
        return 0;
    for (const char *c = url; *c; c++)
        if ((unsigned char)*c <= 0x20 || (unsigned char)*c >= 0x7f)
            return 0;
    return 1;
}

void weft_cfg_load_trace(vctx *v, weft_config *cfg, const config_setting_t *root)
{
    static const char *const keys[] = {"accept_incoming", "sample_ratio", "otlp_endpoint", "service_name",
                                       "batch_size", "batch_interval_ms", "queue_size", "export_timeout_ms", NULL};
    weft_trace_cfg *t = &cfg->trace;
    *t = (weft_trace_cfg){.accept_incoming = 1, .batch_size = 512, .batch_interval_ms = 1000, .queue_size = 2048,
                          .export_timeout_ms = 5000};
    config_setting_t *g = weft_cfg_member(v, root, "", "trace", CONFIG_TYPE_GROUP);
    config_setting_t *ratio = NULL;
    if (g != NULL) {
        weft_cfg_check_keys(v, g, "trace", keys);
        config_setting_t *acc = weft_cfg_member(v, g, "trace", "accept_incoming", CONFIG_TYPE_BOOL);
        if (acc != NULL)
            t->accept_incoming = config_setting_get_bool(acc);
        const char *ep = weft_cfg_string(v, g, "trace", "otlp_endpoint", NULL);
        if (ep != NULL && ep[0] != '\0') {
            if (endpoint_ok(ep))
                t->otlp_endpoint = weft_cfg_strdup(ep);
            else
                weft_cfg_error(v, config_setting_get_member(g, "otlp_endpoint"), "trace.otlp_endpoint",
                               "'%s' is not an http:// or https:// URL (e.g. \"http://127.0.0.1:4318/v1/traces\")", ep);
        }
        const char *svc = weft_cfg_string(v, g, "trace", "service_name", NULL);
        if (svc != NULL && svc[0] == '\0')
            weft_cfg_error(v, config_setting_get_member(g, "service_name"), "trace.service_name", "must not be empty");
        else if (svc != NULL)
            t->service_name = weft_cfg_strdup(svc);
        t->batch_size = (int)weft_cfg_int(v, g, "trace", "batch_size", 1, 100000, 512);
        t->batch_interval_ms = (int)weft_cfg_int(v, g, "trace", "batch_interval_ms", 10, 600000, 1000);
        t->queue_size = (int)weft_cfg_int(v, g, "trace", "queue_size", 1, 10000000, 2048);
        t->export_timeout_ms = (int)weft_cfg_int(v, g, "trace", "export_timeout_ms", 100, 600000, 5000);
        /* A number: libconfig reads 1 as an integer and 1.0 as a float. */
        ratio = config_setting_get_member(g, "sample_ratio");
        if (ratio != NULL) {
            int type = config_setting_type(ratio);
            if (type == CONFIG_TYPE_FLOAT || type == CONFIG_TYPE_INT || type == CONFIG_TYPE_INT64) {
                double r = type == CONFIG_TYPE_FLOAT ? config_setting_get_float(ratio)
                                                     : (double)config_setting_get_int64(ratio);
                if (r < 0.0 || r > 1.0)
                    weft_cfg_error(v, ratio, "trace.sample_ratio", "must be between 0 and 1 (got %g)", r);
                t->sample_ratio = r;
            } else {
                weft_cfg_error(v, ratio, "trace.sample_ratio", "must be a number between 0 and 1");
            }
        }
    }
    /* Recording traces nobody receives helps no one: without an endpoint the
     * default leaves new traces unsampled (an incoming flag is still kept). */
    if (ratio == NULL)
        t->sample_ratio = t->otlp_endpoint != NULL ? 1.0 : 0.0;
    if (t->batch_size > t->queue_size)
        t->batch_size = t->queue_size;
}

void weft_cfg_free_trace(weft_config *cfg)
{
    free(cfg->trace.otlp_endpoint);
    free(cfg->trace.service_name);
}
