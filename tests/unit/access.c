/*
 * Tests for server/request/access.c: the request id weft makes up, and the
 * peer and local addresses, kept raw and formatted when a handler asks.
 */
#include "request/request.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

static int is_made_up_id(const char *id)
{
    if (strlen(id) != 20)
        return 0;
    for (const char *p = id; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
            return 0;
    return 1;
}

static int cmp_id(const void *a, const void *b) { return strcmp(a, b); }

#define IDS_PER_THREAD 3000 /* past the per-thread block of 1024 */

typedef struct id_batch {
    char ids[IDS_PER_THREAD][21];
} id_batch;

static void *make_ids(void *arg)
{
    id_batch *b = arg;
    weft_req *r = weft_req_new();
    for (int i = 0; i < IDS_PER_THREAD; i++) {
        weft_req_set_id(r, NULL, 0);
        memcpy(b->ids[i], r->id, 21);
    }
    weft_req_free(r);
    return NULL;
}

Test(access, made_up_ids_have_one_form_and_never_repeat_across_threads)
{
    enum { THREADS = 3 };
    id_batch *b = calloc(THREADS, sizeof(*b));
    cr_assert_not_null(b);
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        cr_assert_eq(pthread_create(&t[i], NULL, make_ids, &b[i]), 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    char(*all)[21] = (char(*)[21])b;
    size_t n = (size_t)THREADS * IDS_PER_THREAD;
    for (size_t i = 0; i < n; i++) {
        cr_assert(is_made_up_id(all[i]), "not 20 lowercase hex digits: '%s'", all[i]);
        cr_assert(strncmp(all[i], all[0], 8) == 0, "one process, one epoch prefix: %s vs %s", all[i], all[0]);
    }
    qsort(all, n, sizeof(all[0]), cmp_id);
    for (size_t i = 1; i < n; i++)
        cr_assert_str_neq(all[i], all[i - 1], "an id made up twice");
    free(b);
}

Test(access, a_sane_client_id_is_kept_an_insane_one_replaced)
{
    weft_req *r = weft_req_new();
    weft_req_set_id(r, "trace-42.A_b:c", 14);
    cr_assert_str_eq(weft_access_req_id(r), "trace-42.A_b:c");
    weft_req_set_id(r, "has space", 9);
    cr_assert(is_made_up_id(weft_access_req_id(r)), "%s", weft_access_req_id(r));
    weft_req_free(r);
}

Test(access, addresses_are_formatted_when_asked)
{
    weft_req *r = weft_req_new();
    struct sockaddr_in peer = {.sin_family = AF_INET, .sin_port = htons(40123)};
    inet_pton(AF_INET, "10.1.2.3", &peer.sin_addr);
    struct sockaddr_in6 local = {.sin6_family = AF_INET6, .sin6_port = htons(8443)};
    inet_pton(AF_INET6, "2001:db8::7", &local.sin6_addr);
    weft_req_set_addrs(r, &peer, &local);
    int port = 0;
    cr_assert_str_eq(weft_access_req_peer_addr(r, &port), "10.1.2.3");
    cr_assert_eq(port, 40123);
    cr_assert_str_eq(weft_access_req_local_addr(r, &port), "2001:db8::7");
    cr_assert_eq(port, 8443);
    /* Set again (the same weft_req reused by a test): formatted afresh. */
    struct sockaddr_un unix_sa = {.sun_family = AF_UNIX};
    weft_req_set_addrs(r, NULL, &unix_sa);
    cr_assert_str_eq(weft_access_req_peer_addr(r, &port), "");
    cr_assert_eq(port, 0);
    cr_assert_str_eq(weft_access_req_local_addr(r, NULL), "", "a family other than IPv4/IPv6 has no text");
    weft_req_free(r);
}
