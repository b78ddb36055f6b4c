/*
 * libFuzzer target: the chat plugin's handling of one received WebSocket
 * message (the "/who" and "/close CODE" commands, or a broadcast).
 *
 * plugins/chat/chat.c is compiled into this binary (#included); its
 * on_message() runs for each input in a room of three members, the sender
 * first, through a fake host table. Input: byte 0 is the message type
 * (bits 0-1: text, binary, ping-like other, close-like other); the rest is
 * the payload, exactly its length and not NUL-terminated, as the host hands
 * it out.
 * What must hold, for any input:
 *   - "/who..." (text) answers "who 3" to the sender alone;
 *   - "/close CODE" (text, 8..15 bytes) closes the sender with atoi(CODE);
 *   - any other text or binary message goes to every member, unchanged;
 *     other types do nothing;
 *   - no read past the payload (ASan), nothing leaks.
 * Nothing here recurses: the coroutine stack is not at stake.
 */
#include "../../plugins/chat/chat.c"

#include <stdint.h>

#define CHECK(cond)                                                                                                    \
    do {                                                                                                               \
        if (!(cond))                                                                                                   \
            __builtin_trap();                                                                                          \
    } while (0)

struct weft_ws {
    int id;
    int sends, closes, close_code;
    int last_type;
    size_t last_len;
    char last[64];
    const void *last_data;
};

static weft_rc f_send(weft_ws *ws, int type, const void *data, size_t len)
{
    ws->sends++;
    ws->last_type = type;
    ws->last_len = len;
    ws->last_data = data;
    memcpy(ws->last, data, len < sizeof(ws->last) ? len : sizeof(ws->last));
    return WEFT_OK;
}

static void f_close(weft_ws *ws, int code, const char *reason)
{
    CHECK(reason != NULL);
    ws->closes++;
    ws->close_code = code;
}

/* The room keeps the ws group it was given at init: messages reach it
 * without a request. */
static const weft_host_ws fake_ws = {
    .struct_size = sizeof(weft_host_ws), .version = WEFT_HOST_WS_VERSION, .send = f_send, .close = f_close};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    static const int types[] = {WEFT_WS_TEXT, WEFT_WS_BINARY, 9, 8};
    int type = types[data[0] & 3];
    size_t len = size - 1;
    char *payload = malloc(len > 0 ? len : 1); /* exactly its length: ASan sees any read past it */
    CHECK(payload != NULL);
    memcpy(payload, data + 1, len);
    weft_ws ws[3] = {{.id = 0}, {.id = 1}, {.id = 2}};
    weft_ws *members[3] = {&ws[0], &ws[1], &ws[2]};
    room rm = {.ws = &fake_ws, .members = members, .n = 3, .cap = 3};
    pthread_mutex_init(&rm.mu, NULL);
    on_message(&rm, NULL, &ws[0], type, payload, len); /* the local room: no fan-out member */
    pthread_mutex_destroy(&rm.mu);

    int who = type == WEFT_WS_TEXT && len >= 4 && memcmp(payload, "/who", 4) == 0;
    int close_cmd = !who && type == WEFT_WS_TEXT && len > 7 && len < 16 && memcmp(payload, "/close ", 7) == 0;
    if (who) {
        CHECK(ws[0].sends == 1 && ws[1].sends == 0 && ws[2].sends == 0 && ws[0].closes == 0);
        CHECK(ws[0].last_type == WEFT_WS_TEXT && ws[0].last_len == 5 && memcmp(ws[0].last, "who 3", 5) == 0);
    } else if (close_cmd) {
        char code[16];
        memcpy(code, payload + 7, len - 7);
        code[len - 7] = '\0';
        CHECK(ws[0].closes == 1 && ws[0].close_code == atoi(code) && ws[0].sends == 0);
        CHECK(ws[1].sends + ws[1].closes + ws[2].sends + ws[2].closes == 0);
    } else if (type == WEFT_WS_TEXT || type == WEFT_WS_BINARY) {
        for (int i = 0; i < 3; i++)
            CHECK(ws[i].sends == 1 && ws[i].closes == 0 && ws[i].last_type == type && ws[i].last_len == len &&
                  ws[i].last_data == payload);
    } else {
        for (int i = 0; i < 3; i++)
            CHECK(ws[i].sends == 0 && ws[i].closes == 0);
    }
    free(payload);
    return 0;
}
