/*
 * Tests for server/edge/compress.c's Accept-Encoding negotiation and
 * config/compress_cfg.c's type matching, without a server: q-values, the
 * configured order, the wildcard, malformed elements, and the bound on how
 * much of a header is read however long it is.
 */
#include "edge/edge.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

static h2o_mem_pool_t pool;
static h2o_headers_t hs;
static weft_compress_cfg cfg = {.algs = {WEFT_ENC_ZSTD, WEFT_ENC_BR, WEFT_ENC_GZIP}, .n_algs = 3};

static void setup(void)
{
    h2o_mem_init_pool(&pool);
    memset(&hs, 0, sizeof(hs));
}
static void teardown(void) { h2o_mem_clear_pool(&pool); }
TestSuite(edge, .init = setup, .fini = teardown);

static void ae(const char *v)
{
    h2o_add_header(&pool, &hs, H2O_TOKEN_ACCEPT_ENCODING, NULL, v, strlen(v));
}

Test(edge, q_values_then_the_configured_order)
{
    ae("gzip;q=0.5, br;q=0.8");
    cr_assert_eq(weft_edge_negotiate(&hs, &cfg), WEFT_ENC_BR);
    hs.size = 0;
    ae("gzip, br, zstd");
    cr_assert_eq(weft_edge_negotiate(&hs, &cfg), WEFT_ENC_ZSTD);
    weft_compress_cfg gz_first = {.algs = {WEFT_ENC_GZIP, WEFT_ENC_ZSTD}, .n_algs = 2};
    cr_assert_eq(weft_edge_negotiate(&hs, &gz_first), WEFT_ENC_GZIP);
    hs.size = 0;
    ae("zstd;q=0");
    ae("*;q=0.2");
    cr_assert_eq(weft_edge_negotiate(&hs, &cfg), WEFT_ENC_BR, "two header lines read together");
}

Test(edge, refusals_and_nonsense_mean_identity)
{
    const char *none[] = {"gzip;q=0", "*;q=0", "identity", "compress, deflate", "gzip;q=1.5", "gzip;q=0.", "gzip;q=abc",
                          "", ",,,", ";q=1", "gzip;q=0.0000"};
    for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++) {
        hs.size = 0;
        ae(none[i]);
        cr_assert_eq(weft_edge_negotiate(&hs, &cfg), -1, "'%s'", none[i]);
    }
    hs.size = 0;
    cr_assert_eq(weft_edge_negotiate(&hs, &cfg), -1, "no Accept-Encoding");
}

Test(edge, a_megabyte_of_header_is_read_only_as_far_as_the_bound)
{
    size_t n = 1 << 20;
    char *big = malloc(n + 8);
    for (size_t i = 0; i < n; i++)
        big[i] = i % 2 ? ',' : 'x';
    strcpy(big + n, ", gzip");
    ae(big);
    cr_assert_eq(weft_edge_negotiate(&hs, &cfg), -1, "gzip is past the first %d elements", WEFT_EDGE_AE_MAX_CODINGS);
    hs.size = 0;
    memcpy(big, "gzip, ", 6);
    ae(big);
    cr_assert_eq(weft_edge_negotiate(&hs, &cfg), WEFT_ENC_GZIP);
    free(big);
}

Test(edge, type_patterns)
{
    char *types[] = {"text/*", "application/json", "application/*+json"};
    weft_compress_cfg c = {.types = types, .n_types = 3};
    cr_assert(weft_compress_type_matches(&c, "text/html", 9));
    cr_assert(weft_compress_type_matches(&c, "Application/JSON", 16));
    cr_assert(weft_compress_type_matches(&c, "application/problem+json", 24));
    cr_assert(!weft_compress_type_matches(&c, "application/jsonx", 17));
    cr_assert(!weft_compress_type_matches(&c, "application/+json/x", 19));
    cr_assert(!weft_compress_type_matches(&c, "image/png", 9));
    cr_assert(weft_compress_type_is_compressed("IMAGE/PNG", 9));
    cr_assert(weft_compress_type_is_compressed("video/mp4", 9));
    cr_assert(!weft_compress_type_is_compressed("image/svg+xml", 13));
}
