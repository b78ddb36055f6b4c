/*
 * For the fake hosts of the plugin fuzzers: the request group's json_body
 * decided as server/plugin/host_request.c decides it, on the same checks
 * (server/base/json_guard.c, compiled into the target), and the shape of
 * the error answers both the host and the plugins write. Included after
 * the fake's struct weft_req (ctype, body, body_len) and its f_status,
 * f_header_out and f_write.
 */
#ifndef WEFT_FUZZ_JSON_BODY_FAKE_H
#define WEFT_FUZZ_JSON_BODY_FAKE_H

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json_guard.h"

/* 0 when the body may be parsed; else the status the host answers, its message in `msg`. */
static int fake_json_body_refusal(const char *ctype, const char *body, size_t len, int max_depth, char *msg,
                                  size_t size)
{
    if (!weft_media_type_is(ctype, "application/json")) {
        snprintf(msg, size, "content-type must be application/json");
        return 415;
    }
    if (weft_json_too_deep(body, len, max_depth)) {
        snprintf(msg, size, "invalid JSON: nested more than %d levels deep", max_depth);
        return 400;
    }
    return 0;
}

/* response->error_json's body: {"error": MSG, "status": N}. */
static char *fake_error_json(int status, const char *msg)
{
    json_t *j = json_pack("{s:s,s:i}", "error", msg, "status", status);
    char *text = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    return text;
}

static weft_rc f_json_body(weft_req *r, int max_depth, const char **text, size_t *len)
{
    char msg[96];
    int status = fake_json_body_refusal(r->ctype, r->body, r->body_len, max_depth, msg, sizeof(msg));
    if (status != 0) {
        char *e = fake_error_json(status, msg);
        CHECK(e != NULL);
        f_status(r, status);
        f_header_out(r, "content-type", "application/json");
        f_write(r, e, strlen(e));
        free(e);
        return WEFT_ERROR;
    }
    *text = r->body;
    *len = r->body_len;
    return WEFT_OK;
}

/* An error answer: {"error": "..."} as the plugins write it, or with the
 * host's "status" member, which then matches the status sent. */
static int fake_error_shape_ok(json_t *j, int status)
{
    if (!json_is_object(j) || !json_is_string(json_object_get(j, "error")))
        return 0;
    if (json_object_size(j) == 1)
        return 1;
    json_t *s = json_object_get(j, "status");
    return json_object_size(j) == 2 && json_is_integer(s) && json_integer_value(s) == status;
}

#endif
