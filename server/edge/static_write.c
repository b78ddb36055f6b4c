#include "edge/static_write.h"

/* The file's vector, seen through callbacks without send_: h2o reads it
 * into its write buffer. Part of the stream, in the request's pool, so it
 * outlives the write that reads the vector. */
typedef struct one_write {
    h2o_ostream_t super;
    h2o_sendvec_callbacks_t read_only;
} one_write;

static void drop_sendfile(h2o_ostream_t *self, h2o_req_t *req, h2o_sendvec_t *bufs, size_t n, h2o_send_state_t st)
{
    one_write *o = (one_write *)self;
    for (size_t i = 0; i < n; i++) {
        if (bufs[i].callbacks->send_ == NULL)
            continue;
        o->read_only.read_ = bufs[i].callbacks->read_; /* one file, one generator: the same each time */
        bufs[i].callbacks = &o->read_only;
    }
    h2o_ostream_send_next(self, req, bufs, n, st);
}

/* Decided when the answer starts, the one moment its length is known and
 * nothing has been written yet; a 304, a HEAD or an error adds nothing. */
static void on_setup(h2o_req_prefilter_t *self, h2o_req_t *req, h2o_ostream_t **slot)
{
    size_t len = req->res.content_length;
    if (len > 0 && len <= WEFT_STATIC_ONE_WRITE_MAX && !h2o_memis(req->method.base, req->method.len, H2O_STRLIT("HEAD"))) {
        one_write *o = (one_write *)h2o_add_ostream(req, H2O_ALIGNOF(one_write), sizeof(one_write), slot);
        o->super.do_send = drop_sendfile;
        o->read_only.send_ = NULL;
        slot = &o->super.next;
    }
    h2o_setup_next_prefilter(self, req, slot);
}

void weft_static_one_write(h2o_req_t *req)
{
    h2o_req_prefilter_t *p = h2o_add_prefilter(req, H2O_ALIGNOF(*p), sizeof(*p));
    p->on_setup_ostream = on_setup;
}
