/* What events.c and events_fanout.c share (one plugin, two files). */
#ifndef EVENTS_H
#define EVENTS_H

#include <weft/plugin.h>

/* The route's options. */
typedef struct ev_cfg {
    int fanout;       /* fanout = "postgres": subscribers and publishers on a channel */
    char channel[64]; /* its channel */
} ev_cfg;

/** Reads fanout and channel; 0, or -1 after h->init->error. */
int ev_fanout_init(const weft_host *h, weft_init *ctx, ev_cfg *cfg);
/** GET: streams the channel's events (blocking style / reactive). */
weft_rc ev_subscribe(weft_req *req, const ev_cfg *cfg);
weft_rc ev_subscribe_async(weft_req *req, const ev_cfg *cfg);
/** POST: the body is one event for every subscriber (blocking style / reactive). */
weft_rc ev_publish(weft_req *req, const ev_cfg *cfg);
weft_rc ev_publish_async(weft_req *req, const ev_cfg *cfg);

#endif
