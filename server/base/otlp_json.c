/* The OTLP/JSON encoding of spans (opentelemetry-proto's JSON mapping:
 * ids as lowercase hex, 64-bit integers and times as decimal strings,
 * enums as numbers), built with jansson. */
#include "base/otlp.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "version.h"

static json_t *attr_str(const char *key, const char *value)
{
    return json_pack("{s:s, s:{s:s}}", "key", key, "value", "stringValue", value);
}

static json_t *attr_int(const char *key, long long value)
{
    char num[24];
    snprintf(num, sizeof(num), "%lld", value);
    return json_pack("{s:s, s:{s:s}}", "key", key, "value", "intValue", num);
}

/* jansson refuses (NULL) text that is not UTF-8: a path is bytes from a
 * client, so such an attribute is left out rather than losing the span. */
static void add(json_t *attrs, json_t *a)
{
    if (a != NULL)
        json_array_append_new(attrs, a);
}

static json_t *encode_span(const weft_span *s)
{
    char trace[33], span[17], parent[17], start[24], end[24];
    weft_trace_hex(trace, s->trace_id, 16);
    weft_trace_hex(span, s->span_id, 8);
    weft_trace_hex(parent, s->parent_id, 8);
    snprintf(start, sizeof(start), "%" PRIu64, s->start_unix_ns);
    snprintf(end, sizeof(end), "%" PRIu64, s->end_unix_ns);
    json_t *attrs = json_array();
    add(attrs, attr_str("http.request.method", s->method));
    if (s->kind == WEFT_SPAN_SERVER) {
        add(attrs, attr_str("url.path", s->target));
        /* An answer given before routing (404, 414) has no route; one given
         * before or instead of a handler (429, a static file) no policy. */
        if (s->route[0] != '\0') {
            add(attrs, attr_str("http.route", s->route));
            add(attrs, attr_str("weft.route", s->route));
        }
        if (s->policy[0] != '\0')
            add(attrs, attr_str("weft.policy", s->policy));
        add(attrs, attr_str("weft.answered_by", s->answered_by));
        if (s->client[0] != '\0')
            add(attrs, attr_str("client.address", s->client));
    } else {
        add(attrs, attr_str("url.full", s->target));
        add(attrs, attr_str("server.address", s->peer));
        add(attrs, attr_int("server.port", s->peer_port));
    }
    if (s->status > 0)
        add(attrs, attr_int("http.response.status_code", s->status));
    json_t *status = s->error ? json_pack("{s:i, s:s}", "code", 2, "message", s->error_text) : json_object();
    json_t *j = json_pack("{s:s, s:s, s:s, s:i, s:s, s:s, s:o, s:o}", "traceId", trace, "spanId", span, "name",
                          s->name[0] != '\0' ? s->name : "-", "kind", s->kind, "startTimeUnixNano", start,
                          "endTimeUnixNano", end, "attributes", attrs, "status",
                          status != NULL ? status : json_object());
    if (j == NULL) /* a name that is not UTF-8 */
        return NULL;
    if (s->has_parent)
        json_object_set_new(j, "parentSpanId", json_string(parent));
    if (s->tracestate[0] != '\0')
        json_object_set_new(j, "traceState", json_string(s->tracestate));
    return j;
}

char *weft_otlp_encode(weft_span *const *spans, size_t n, const char *service_name, size_t *len)
{
    json_t *list = json_array();
    for (size_t i = 0; list != NULL && i < n; i++) {
        json_t *j = encode_span(spans[i]);
        if (j != NULL)
            json_array_append_new(list, j);
    }
    json_t *res_attrs = json_array();
    add(res_attrs, attr_str("service.name", service_name));
    add(res_attrs, attr_str("service.version", WEFT_VERSION));
    json_t *doc = json_pack("{s:[{s:{s:o}, s:[{s:{s:s, s:s}, s:o}]}]}", "resourceSpans", "resource", "attributes",
                            res_attrs, "scopeSpans", "scope", "name", "weft", "version", WEFT_VERSION, "spans", list);
    if (doc == NULL)
        return NULL;
    char *text = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    if (text != NULL)
        *len = strlen(text);
    return text;
}
