/*
 * Tests for server/base/dynlib.c: what an operator reads when a library
 * weft opens at run time (libpq, libcurl) is missing or too old, and that a
 * present one resolves.
 */
#include "base/dynlib.h"

#include <criterion/criterion.h>
#include <string.h>

Test(dynlib, a_missing_library_names_its_soname_and_debian_package)
{
    char why[256] = "";
    cr_assert_null(weft_dynlib_open("libweft-absent.so.9", "libweft-absent9", why, sizeof why));
    cr_assert(strstr(why, "cannot load libweft-absent.so.9 (Debian package libweft-absent9): ") == why, "%s", why);
    cr_assert(strstr(why, "libweft-absent.so.9: cannot open shared object file") != NULL, "dlerror kept: %s", why);
}

Test(dynlib, a_present_symbol_resolves_a_missing_one_names_itself_and_the_hint)
{
    char why[256] = "";
    void *h = weft_dynlib_open("libc.so.6", "libc6", why, sizeof why);
    cr_assert_not_null(h, "%s", why);
    size_t (*len)(const char *) = (size_t (*)(const char *))weft_dynlib_sym(h, "libc.so.6", "strlen", "", why, sizeof why);
    cr_assert_not_null(len, "%s", why);
    cr_assert_eq(len("weft"), 4);
    cr_assert_null(weft_dynlib_sym(h, "libc.so.6", "weft_no_such_symbol", " (libc 9 or newer is needed)", why, sizeof why));
    cr_assert_str_eq(why, "libc.so.6 has no weft_no_such_symbol (libc 9 or newer is needed)");
    weft_dynlib_close(h);
}
