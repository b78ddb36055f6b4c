#include "edge/static_write.h"

/* Decided when the answer starts, the one moment its length is known and
 * nothing has been written yet; a 304, a HEAD or an error adds nothing. */
static void drop_sendfile(h2o_ostream_t *self, h2o_req_t *req, h2o_sendvec_t *bufs, size_t n, h2o_send_state_t st)
{
    for (size_t i = 0; i < n; i++) {
        if (bufs[i].callbacks->send_ == NULL)
            continue;
        /* The request's pool outlives the write that reads the vector. */
        h2o_sendvec_callbacks_t *cb = h2o_mem_alloc_pool(&req->pool, h2o_sendvec_callbacks_t, 1);
        *cb = (h2o_sendvec_callbacks_t){.read_ = bufs[i].callbacks->read_};
        bufs[i].callbacks = cb;
    }
    h2o_ostream_send_next(self, req, bufs, n, st);
}

static void on_setup(h2o_req_prefilter_t *self, h2o_req_t *req, h2o_ostream_t **slot)
{
    size_t len = req->res.content_length;
    if (len > 0 && len <= WEFT_STATIC_ONE_WRITE_MAX && !h2o_memis(req->method.base, req->method.len, H2O_STRLIT("HEAD"))) {
        h2o_ostream_t *o = h2o_add_ostream(req, H2O_ALIGNOF(*o), sizeof(*o), slot);
        o->do_send = drop_sendfile;
        slot = &o->next;
    }
    h2o_setup_next_prefilter(self, req, slot);
}

void weft_static_one_write(h2o_req_t *req)
{
    h2o_req_prefilter_t *p = h2o_add_prefilter(req, H2O_ALIGNOF(*p), sizeof(*p));
    p->on_setup_ostream = on_setup;
}
