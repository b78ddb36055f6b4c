/*
 * Fixture: a valid shared object that exports a function, but not
 * weft_plugin_entry(). The loader must say which symbol is missing.
 */
#include <weft/plugin.h>

WEFT_EXPORT int weft_plugin_entry_point_misspelled(void);

int weft_plugin_entry_point_misspelled(void)
{
    return 42;
}
