/* Fixture for tests/unit/crash.c: the handler faults itself (state NULL),
 * or calls `state` as a function, the way a plugin calls into the host (a
 * host function that faults or aborts) or into the C library. Called
 * directly by the test, never served: it needs no host table. */
#include <stdint.h>
#include <string.h>
#include <weft/plugin.h>

/* A real SIGSEGV at a small address (see crashy.c). */
static volatile int *null_struct_member(void)
{
    static volatile uintptr_t offset = 16;
    return (volatile int *)offset;
}

static volatile int calls;

static int faulty_handle(weft_req *req, void *state)
{
    (void)req;
    void (*fn)(void) = NULL;
    memcpy(&fn, &state, sizeof(fn));
    if (fn == NULL)
        *null_struct_member() = 1;
    else
        fn();
    return ++calls; /* the call above is not a tail call: this frame stays on the stack */
}

static const weft_plugin faulty_plugin = {
    WEFT_PLUGIN_HEADER,
    .name = "faulty",
    .version = "1.0.0",
    .description = "test fixture: faults itself, or calls the function it is given",
    .handle = faulty_handle,
};

WEFT_EXPORT const weft_plugin *weft_plugin_entry(void) { return &faulty_plugin; }
