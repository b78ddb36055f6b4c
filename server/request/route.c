#include "request/route.h"

#include "base/log.h"

int weft_route_slot_new(void)
{
    static int n_slots;
    if (n_slots == WEFT_ROUTE_SLOTS)
        weft_fatal("more than %d per-route slots: raise WEFT_ROUTE_SLOTS in request/route.h", WEFT_ROUTE_SLOTS);
    return n_slots++;
}
