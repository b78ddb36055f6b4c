/*
 * Tests for server/base/plugin_path.c: the one plugin search order the
 * loader and the route fragments share.
 */
#include "base/plugin_path.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

Test(plugin_path, the_environment_comes_first_and_empty_entries_are_skipped)
{
    char *cfg_dirs[] = {"/etc/weft/plugins", "", "/usr/lib/weft/plugins"};
    setenv("WEFT_PLUGIN_PATH", ":/build/plugins::/build/fixtures:", 1);
    weft_plugin_path sp;
    weft_plugin_path_init(&sp, cfg_dirs, 3);
    cr_assert_eq(sp.n, 4);
    cr_assert_str_eq(sp.dirs[0], "/build/plugins");
    cr_assert_str_eq(sp.dirs[1], "/build/fixtures");
    cr_assert_str_eq(sp.dirs[2], "/etc/weft/plugins");
    cr_assert_str_eq(sp.dirs[3], "/usr/lib/weft/plugins");
    char line[256];
    weft_plugin_path_format(&sp, line, sizeof line);
    cr_assert_str_eq(line, "/build/plugins:/build/fixtures:/etc/weft/plugins:/usr/lib/weft/plugins");
    weft_plugin_path_free(&sp);
}

Test(plugin_path, without_the_environment_only_the_config_dirs)
{
    char *cfg_dirs[] = {"/srv/plugins"};
    unsetenv("WEFT_PLUGIN_PATH");
    weft_plugin_path sp;
    weft_plugin_path_init(&sp, cfg_dirs, 1);
    cr_assert_eq(sp.n, 1);
    cr_assert_str_eq(sp.dirs[0], "/srv/plugins");
    char line[8];
    weft_plugin_path_format(&sp, line, sizeof line); /* cut, still terminated */
    cr_assert_eq(strlen(line), sizeof line - 1);
    weft_plugin_path_free(&sp);
    weft_plugin_path_init(&sp, NULL, 0);
    cr_assert_eq(sp.n, 0);
    weft_plugin_path_format(&sp, line, sizeof line);
    cr_assert_str_eq(line, "");
    weft_plugin_path_free(&sp);
}
