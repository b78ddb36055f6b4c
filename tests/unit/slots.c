/*
 * Tests for the slots higher layers keep their state in: per-request
 * (request/request.c: storage of each slot's own size past the weft_req, in
 * its one allocation, zeroed), per-route (request/route.c) and per-loop
 * (core/loop.c). A slot taken once requests exist is refused (it would not
 * fit the requests already made).
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>

#include "core/loop.h"
#include "request/request.h"
#include "request/route.h"
#include "unitloop.h"

typedef struct big {
    char bytes[40];
} big;

WEFT_REQ_SLOT(small_slot, uint64_t)
WEFT_REQ_SLOT(big_slot, big)
WEFT_LOOP_SLOT(test_loop_slot)
WEFT_ROUTE_SLOT(test_route_slot)

Test(slots, request_slots_are_zeroed_aligned_and_apart)
{
    cr_assert_neq(small_slot, big_slot);
    for (int round = 0; round < 2; round++) { /* the second request must not see the first one's values */
        weft_req *r = weft_req_new();
        cr_assert_not_null(r);
        uint64_t *s = weft_req_ext(r, small_slot);
        big *b = weft_req_ext(r, big_slot);
        cr_assert_eq((uintptr_t)s % 16, 0);
        cr_assert_eq((uintptr_t)b % 16, 0);
        cr_assert_geq((char *)s, (char *)r + sizeof(*r), "past the weft_req");
        cr_assert((char *)b >= (char *)(s + 1) || (char *)(b + 1) <= (char *)s, "the slots overlap");
        cr_assert_eq(*s, 0);
        for (size_t i = 0; i < sizeof(b->bytes); i++)
            cr_assert_eq(b->bytes[i], 0, "round %d: byte %zu", round, i);
        *s = UINT64_MAX;
        memset(b, 0xab, sizeof(*b));
        /* The arena starts after the slots: an allocation never lands on them. */
        char *p = weft_req_alloc(r, 64);
        cr_assert_not_null(p);
        memset(p, 0xcd, 64);
        cr_assert_eq(*s, UINT64_MAX);
        cr_assert_eq((unsigned char)b->bytes[sizeof(b->bytes) - 1], 0xab);
        weft_req_free(r);
    }
}

Test(slots, a_request_slot_taken_after_the_first_request_is_refused, .signal = SIGABRT)
{
    weft_req_free(weft_req_new());
    weft_req_slot_new(8);
}

Test(slots, route_slots_start_empty)
{
    weft_route rt;
    memset(&rt, 0, sizeof(rt));
    cr_assert_null(weft_route_get(&rt, test_route_slot));
    int x;
    weft_route_set(&rt, test_route_slot, &x);
    cr_assert_eq(weft_route_get(&rt, test_route_slot), &x);
}

static void on_loop(void *arg)
{
    weft_loop *L = weft_loop_current;
    *(int *)arg = weft_loop_get(L, test_loop_slot) == NULL;
    weft_loop_set(L, test_loop_slot, arg);
}

Test(slots, loop_slots_start_empty_on_every_loop)
{
    int a = 0, b = 0;
    wt_loops_start(2);
    wt_on_loop(0, on_loop, &a);
    wt_on_loop(1, on_loop, &b);
    cr_assert(a && b, "a loop's slot is NULL until its owner sets it");
    cr_assert_eq(weft_loop_get(weft_loop_at(0), test_loop_slot), &a);
    cr_assert_eq(weft_loop_get(weft_loop_at(1), test_loop_slot), &b);
    wt_loops_stop();
}
