/*
 * Tests for server/base/json_guard.c: the nesting bound a JSON body passes
 * before a recursive parser sees it (request->json_body), checked against
 * jansson's own nesting, and the media type test of Content-Type.
 */
#include "base/json_guard.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static char *nested(int depth, char open, char close)
{
    char *s = malloc((size_t)depth * 2 + 1);
    for (int i = 0; i < depth; i++) {
        s[i] = open;
        s[depth * 2 - 1 - i] = close;
    }
    s[depth * 2] = '\0';
    return s;
}

Test(json_guard, the_bound_is_inclusive_for_arrays_and_objects_alike)
{
    char *a = nested(4, '[', ']');
    cr_assert_eq(weft_json_too_deep(a, strlen(a), 4), 0);
    cr_assert_eq(weft_json_too_deep(a, strlen(a), 3), 1);
    free(a);
    const char *obj = "{\"a\":{\"b\":{\"c\":[1,{\"d\":2}]}}}"; /* five levels */
    cr_assert_eq(weft_json_too_deep(obj, strlen(obj), 5), 0);
    cr_assert_eq(weft_json_too_deep(obj, strlen(obj), 4), 1);
    /* Siblings do not add up: depth is of the deepest path. */
    const char *wide = "[[1],[2],[3],[4],[5],[6]]";
    cr_assert_eq(weft_json_too_deep(wide, strlen(wide), 2), 0);
}

Test(json_guard, brackets_in_strings_and_escaped_quotes_do_not_count)
{
    const char *s = "{\"k\":\"[[[[[[{{{{\\\"[[[[\"}";
    cr_assert_eq(weft_json_too_deep(s, strlen(s), 1), 0);
    /* A string that ends in an escaped backslash ends there. */
    const char *t = "[\"\\\\\",[[1]]]";
    cr_assert_eq(weft_json_too_deep(t, strlen(t), 3), 0);
    cr_assert_eq(weft_json_too_deep(t, strlen(t), 2), 1);
}

/* How deep jansson nests a parsed document. */
static int depth_of(const json_t *j)
{
    int deepest = 0;
    if (json_is_array(j)) {
        size_t i;
        json_t *v;
        json_array_foreach(j, i, v) {
            int d = depth_of(v);
            deepest = d > deepest ? d : deepest;
        }
        return deepest + 1;
    }
    if (json_is_object(j)) {
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)j, k, v) {
            int d = depth_of(v);
            deepest = d > deepest ? d : deepest;
        }
        return deepest + 1;
    }
    return 0;
}

Test(json_guard, the_count_is_exactly_jansson_s_nesting_for_documents_it_parses)
{
    static const char *const docs[] = {
        "1", "[]", "{}", "[[],{}]", "[1,[2,[3,[4]]]]", "{\"a\":[{\"b\":\"]]]\"},{\"c\":[[\"[\"]]}]}",
        "[\"\\\"\",[[\"}\"]]]", "{\"k\\\"[\":{\"v\":[null,true,{\"w\":[]}]}}",
    };
    for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
        json_error_t err;
        json_t *j = json_loads(docs[i], JSON_DECODE_ANY, &err);
        cr_assert_not_null(j, "%s: %s", docs[i], err.text);
        int d = depth_of(j);
        json_decref(j);
        size_t n = strlen(docs[i]);
        cr_assert_eq(weft_json_too_deep(docs[i], n, d), 0, "%s passes a bound of its depth %d", docs[i], d);
        if (d > 0)
            cr_assert_eq(weft_json_too_deep(docs[i], n, d - 1), 1, "%s (depth %d) fails a bound of %d", docs[i], d,
                         d - 1);
    }
    char *deep = nested(3000, '[', ']');
    cr_assert_eq(weft_json_too_deep(deep, strlen(deep), 1000), 1, "3000 levels pass a bound of 1000");
    free(deep);
}

Test(json_guard, content_type_names_the_media_type_with_or_without_parameters)
{
    cr_assert(weft_media_type_is("application/json", "application/json"));
    cr_assert(weft_media_type_is("  Application/JSON ; charset=utf-8", "application/json"));
    cr_assert(weft_media_type_is("application/json;charset=utf-8", "application/json"));
    cr_assert(!weft_media_type_is(NULL, "application/json"));
    cr_assert(!weft_media_type_is("", "application/json"));
    cr_assert(!weft_media_type_is("application/jsonx", "application/json"));
    cr_assert(!weft_media_type_is("text/plain", "application/json"));
    cr_assert(!weft_media_type_is("application/json-seq", "application/json"));
}
