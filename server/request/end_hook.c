#include "request/end_hook.h"

#include <stdalign.h>
#include <string.h>

typedef struct end_hook {
    h2o_logger_t super;
    void (*on_end)(void *data, h2o_req_t *req);
    alignas(max_align_t) unsigned char data[];
} end_hook;

static void run(h2o_logger_t *self, h2o_req_t *req)
{
    end_hook *h = (end_hook *)self;
    h->on_end(h->data, req);
}

void *weft_end_hook_alloc(h2o_req_t *req, size_t size, void (*on_end)(void *data, h2o_req_t *req))
{
    size_t n = req->num_loggers;
    size_t list_at = (offsetof(end_hook, data) + size + alignof(h2o_logger_t *) - 1) & ~(alignof(h2o_logger_t *) - 1);
    /* One allocation: the hook, the caller's bytes, then the new list (the path's loggers first). */
    end_hook *h = h2o_mem_alloc_pool_aligned(&req->pool, alignof(end_hook), list_at + (n + 1) * sizeof(h2o_logger_t *));
    h2o_logger_t **list = (h2o_logger_t **)((char *)h + list_at);
    *h = (end_hook){.super.log_access = run, .on_end = on_end};
    if (n != 0)
        memcpy(list, req->loggers, n * sizeof(*list));
    list[n] = &h->super;
    req->loggers = list;
    req->num_loggers = n + 1;
    return h->data;
}
