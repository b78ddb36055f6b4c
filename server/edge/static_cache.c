#include "edge/static_cache.h"

#include <stdlib.h>
#include <string.h>

#define SLOTS 512 /* direct-mapped: a collision only costs a check */
#define MAX_PATH 200

typedef struct entry {
    uint64_t epoch; /* valid while equal to the loop's */
    uint64_t route_id;
    uint32_t hash;
    uint16_t len;
    uint8_t variants;
    char rel[MAX_PATH];
} entry;

static _Thread_local entry *slots;
/* Starts at 1: a zeroed entry is never valid. */
static _Thread_local uint64_t epoch = 1;

/* Eight bytes a step (a path is looked up on every request); the multiply
 * and the final fold spread them over the slot bits. The key is the
 * client's path, but a collision only costs the check it would have cost. */
static uint32_t hash_of(uint64_t id, const char *p, size_t n, int variants)
{
    uint64_t h = (id ^ ((uint64_t)variants << 63) ^ n) * 0x9e3779b97f4a7c15ull;
    for (; n >= 8; p += 8, n -= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * 0x9e3779b97f4a7c15ull;
    }
    if (n > 0) { /* the last 1-7 bytes in at most two loads, overlapping when short */
        uint64_t w;
        if (n >= 4) {
            uint32_t lo, hi;
            memcpy(&lo, p, 4);
            memcpy(&hi, p + n - 4, 4);
            w = (uint64_t)lo | (uint64_t)hi << 32;
        } else {
            w = (uint64_t)(unsigned char)p[0] | (uint64_t)(unsigned char)p[n / 2] << 8 |
                (uint64_t)(unsigned char)p[n - 1] << 16;
        }
        h = (h ^ w) * 0x9e3779b97f4a7c15ull;
    }
    return (uint32_t)(h >> 32) ^ (uint32_t)h;
}

int weft_static_cache_hit(uint64_t route_id, const char *rel, size_t len, int variants)
{
    if (slots == NULL || len > MAX_PATH)
        return 0;
    uint32_t h = hash_of(route_id, rel, len, variants);
    const entry *e = &slots[h % SLOTS];
    return e->epoch == epoch && e->route_id == route_id && e->hash == h && e->len == len &&
           e->variants == (uint8_t)variants && memcmp(e->rel, rel, len) == 0;
}

void weft_static_cache_put(uint64_t route_id, const char *rel, size_t len, int variants)
{
    if (len > MAX_PATH)
        return;
    if (slots == NULL && (slots = calloc(SLOTS, sizeof(*slots))) == NULL)
        return; /* without memory every request is checked */
    uint32_t h = hash_of(route_id, rel, len, variants);
    entry *e = &slots[h % SLOTS];
    *e = (entry){.epoch = epoch, .route_id = route_id, .hash = h, .len = (uint16_t)len, .variants = (uint8_t)variants};
    memcpy(e->rel, rel, len);
}

static void on_tick(weft_loop *L)
{
    (void)L;
    epoch++;
}

static void on_teardown(weft_loop *L)
{
    (void)L;
    free(slots);
    slots = NULL;
}

const weft_loop_hook weft_static_cache_hook = {.teardown = on_teardown, .tick = on_tick};
