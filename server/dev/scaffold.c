#include "dev/scaffold.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/names.h"
#include "version.h"

/* Templates: @N@ is the plugin name, @I@ the name as a C identifier. */
static const char source_tpl[] =
    "/*\n"
    " * @N@ — a weft plugin (plugin API 2). Build: make; run: weft dev (or copy\n"
    " * @N@.so into a plugin directory). One blocking-style handler (pool and\n"
    " * coroutine routes) and one reactive handler (reactive routes).\n"
    " */\n"
    "#include <stdlib.h>\n"
    "#include <string.h>\n"
    "#include <weft/plugin.h>\n"
    "\n"
    "struct @I@_route {\n"
    "    char *greeting; /* read-only after init: shared by every thread */\n"
    "};\n"
    "\n"
    "/* init gets the host table; handlers get it from weft_req_host(req). */\n"
    "static weft_rc @I@_init(const weft_host *h, weft_init *ctx, void **state)\n"
    "{\n"
    "    struct @I@_route *rt = calloc(1, sizeof(*rt));\n"
    "    /* option strings die with the config: keep a copy */\n"
    "    if (rt == NULL || (rt->greeting = strdup(h->init->opt_string(ctx, \"greeting\", \"Hello from @N@\"))) == NULL) {\n"
    "        free(rt);\n"
    "        h->init->error(ctx, \"out of memory\");\n"
    "        return WEFT_ERROR;\n"
    "    }\n"
    "    *state = rt;\n"
    "    return WEFT_OK;\n"
    "}\n"
    "\n"
    "static void @I@_fini(void *state)\n"
    "{\n"
    "    struct @I@_route *rt = state;\n"
    "    free(rt->greeting);\n"
    "    free(rt);\n"
    "}\n"
    "\n"
    "/* Blocking style: may call the host's waits without a callback, e.g.\n"
    " * h->sync->sleep(req, ms, NULL, NULL) or h->db->query(..., &res, NULL, NULL). */\n"
    "static weft_rc @I@_handle(weft_req *req, void *state)\n"
    "{\n"
    "    const weft_host *h = weft_req_host(req);\n"
    "    struct @I@_route *rt = state;\n"
    "    if (h->response->header(req, \"content-type\", \"text/plain\") != WEFT_OK)\n"
    "        return WEFT_ERROR;\n"
    "    return h->response->writef(req, \"%s\\n\", rt->greeting);\n"
    "}\n"
    "\n"
    "/* Reactive: must never block. To wait, pass a callback (the call returns\n"
    " * WEFT_AGAIN: return that) and call h->response->done() in the callback. */\n"
    "static weft_rc @I@_handle_async(weft_req *req, void *state)\n"
    "{\n"
    "    return @I@_handle(req, state);\n"
    "}\n"
    "\n"
    "static const weft_plugin @I@_plugin = {\n"
    "    WEFT_PLUGIN_HEADER,\n"
    "    .name = \"@N@\",\n"
    "    .version = \"0.1.0\",\n"
    "    .description = \"@N@ plugin\",\n"
    "    .init = @I@_init,\n"
    "    .fini = @I@_fini,\n"
    "    .handle = @I@_handle,\n"
    "    .handle_async = @I@_handle_async,\n"
    "};\n"
    "\n"
    "WEFT_EXPORT const weft_plugin *weft_plugin_entry(void) { return &@I@_plugin; }\n";

static const char makefile_tpl[] =
    "# Builds @N@.so against the weft SDK (the weft-dev package's pkg-config\n"
    "# file, or a weft source tree: make WEFT_CFLAGS=-I/path/to/weft/server/include),\n"
    "# and `make test` runs tests/@N@_test.c (weft's test kit, pkg-config weft-test)\n"
    "# against the real weft: $(WEFT), or WEFT=/path/to/weft.\n"
    "WEFT_CFLAGS ?= $(shell pkg-config --cflags weft-plugin 2>/dev/null || echo @S@)\n"
    "WEFT_TEST_CFLAGS ?= $(shell pkg-config --cflags weft-test 2>/dev/null || echo @S@)\n"
    "WEFT_TEST_LIBS ?= $(shell pkg-config --libs weft-test 2>/dev/null || echo -L@K@ -lweft-test -lcriterion -lcurl)\n"
    "WEFT ?= @W@\n"
    "CFLAGS ?= -O2 -g -Wall -Wextra\n"
    "# Where the builds go (`weft dev` tests in a directory of its own: O=...).\n"
    "O ?= .\n"
    "\n"
    "$(O)/@N@.so: @N@.c\n"
    "\tmkdir -p $(O) && chmod go-w $(O)  # weft refuses plugins in group-writable places\n"
    "\t$(CC) $(CFLAGS) $(WEFT_CFLAGS) -shared -fPIC -fvisibility=hidden -o $@ $<\n"
    "\tchmod go-w $@\n"
    "\t[ ! -d public ] || ln -sfn $(CURDIR)/public $(O)/@N@.public  # where @N@.routes finds it\n"
    "\n"
    "# Drops @N@.so and @N@.routes into a running server's plugin directory,\n"
    "# each by write-then-rename: a new endpoint with no config edit or reload.\n"
    "# A public/ folder goes first, as @N@.public beside them (a static route in\n"
    "# @N@.routes serves it: docs/PLUGINS.md).\n"
    "PLUGIN_DIR ?= /usr/local/lib/weft/plugins\n"
    "install: @N@.so\n"
    "\t[ ! -d public ] || { rm -rf $(PLUGIN_DIR)/.@N@.public.new && cp -R public $(PLUGIN_DIR)/.@N@.public.new && "
    "chmod -R go-w $(PLUGIN_DIR)/.@N@.public.new && rm -rf $(PLUGIN_DIR)/@N@.public && "
    "mv $(PLUGIN_DIR)/.@N@.public.new $(PLUGIN_DIR)/@N@.public; }\n"
    "\tinstall -m 0644 @N@.so $(PLUGIN_DIR)/.@N@.so.new && mv $(PLUGIN_DIR)/.@N@.so.new $(PLUGIN_DIR)/@N@.so\n"
    "\tinstall -m 0644 @N@.routes $(PLUGIN_DIR)/.@N@.routes.new && mv $(PLUGIN_DIR)/.@N@.routes.new "
    "$(PLUGIN_DIR)/@N@.routes\n"
    "\n"
    "$(O)/tests/@N@_test: tests/@N@_test.c\n"
    "\tmkdir -p $(O)/tests\n"
    "\t$(CC) $(CFLAGS) $(WEFT_TEST_CFLAGS) -o $@ $< $(WEFT_TEST_LIBS)\n"
    "\n"
    "# Each test starts its own weft (ephemeral port) with the @N@.so and\n"
    "# @N@.routes of $(O).\n"
    "test: $(O)/@N@.so $(O)/tests/@N@_test\n"
    "\t[ $(O) -ef . ] || cp @N@.routes $(O)/@N@.routes\n"
    "\tWEFT_TEST_PLUGIN_DIR=$(O) WEFT_TEST_BIN=$(WEFT) $(O)/tests/@N@_test\n"
    "\n"
    "clean:\n"
    "\trm -f @N@.so tests/@N@_test\n"
    "\n"
    ".PHONY: clean install test\n";

static const char test_tpl[] =
    "/*\n"
    " * Tests of @N@ with weft's test kit (<weft/test.h>, Criterion): each test\n"
    " * starts the real weft on an ephemeral port with the @N@.so of this\n"
    " * directory, sends requests and checks the answers. `make test` runs them.\n"
    " */\n"
    "#include <weft/test.h>\n"
    "\n"
    "/* The @N@.so that `make test` built, and its routes: @N@.routes beside it, as in production. */\n"
    "static weft_test_server *start(void)\n"
    "{\n"
    "    return weft_test_start(&(weft_test_options){0});\n"
    "}\n"
    "\n"
    "Test(@I@, greets_under_coroutine_and_reactive)\n"
    "{\n"
    "    weft_test_server *s = start();\n"
    "    /* the reactive route over HTTP/2, to show how */\n"
    "    const weft_test_request requests[] = {{.path = \"/@N@\"}, {.path = \"/@N@/reactive\", .http2 = 1}};\n"
    "    for (int i = 0; i < 2; i++) {\n"
    "        weft_test_response r;\n"
    "        weft_test_send(s, &requests[i], &r);\n"
    "        weft_assert_status(&r, 200);\n"
    "        weft_assert_header(&r, \"content-type\", \"text/plain\");\n"
    "        weft_assert_body(&r, \"Hello from @N@\\n\");\n"
    "        weft_test_response_free(&r);\n"
    "    }\n"
    "    weft_test_stop(s); /* and weft exited cleanly */\n"
    "}\n"
    "\n"
    "Test(@I@, unknown_subpath_is_404)\n"
    "{\n"
    "    weft_test_server *s = start();\n"
    "    weft_test_response r;\n"
    "    weft_test_get(s, \"/@N@/no-such-thing\", &r);\n"
    "    weft_assert_status(&r, 404);\n"
    "    weft_test_response_free(&r);\n"
    "    weft_test_stop(s);\n"
    "}\n";

static const char route_tpl[] =
    "# Routes of @N@. Installed next to @N@.so in a plugin directory, they are\n"
    "# served with no edit to the main config (docs/CONFIG.md, route fragments).\n"
    "routes = (\n"
    "  { path = \"/@N@\"; plugin = \"@N@\"; dispatch = \"coroutine\"; methods = [\"GET\"]; },\n"
    "  { path = \"/@N@/reactive\"; plugin = \"@N@\"; dispatch = \"reactive\"; methods = [\"GET\"]; }\n"
    ");\n";

static const char readme_tpl[] =
    "# @N@\n"
    "\n"
    "A weft plugin. `make` builds `@N@.so`; `weft dev .` (in the parent\n"
    "directory) builds it, serves it on http://127.0.0.1:8080/@N@ and rebuilds\n"
    "it on every save. `@N@.routes` holds its routes: `make install\n"
    "PLUGIN_DIR=...` drops `@N@.so` and `@N@.routes` into a running server's\n"
    "plugin directory and the endpoints answer. `make test` runs\n"
    "`tests/@N@_test.c` against the real weft. The plugin API is documented in\n"
    "weft's docs/PLUGINS.md and in `weft/plugin.h`; the test kit in `weft/test.h`.\n";

const char *weft_sdk_cflags(void)
{
    static char flags[1200];
    if (flags[0] == '\0') {
        FILE *p = popen("pkg-config --cflags weft-plugin 2>/dev/null", "r");
        size_t n = p != NULL ? fread(flags, 1, sizeof(flags) - 1, p) : 0;
        int rc = p != NULL ? pclose(p) : -1;
        flags[n] = '\0';
        flags[strcspn(flags, "\n")] = '\0';
        /* A build tree has no .pc installed: use its own header directory. */
        if (rc != 0 || flags[0] == '\0')
            snprintf(flags, sizeof(flags), "-I%s", WEFT_SDK_INCLUDE_DIR);
    }
    return flags;
}

/* What a template's @X@ stands for. */
typedef struct tpl_values {
    const char *name, *ident, *weft;
} tpl_values;

static const char *tpl_value(char key, const tpl_values *v)
{
    switch (key) {
    case 'N': return v->name;
    case 'I': return v->ident;
    case 'S': return "-I" WEFT_SDK_INCLUDE_DIR;
    case 'K': return WEFT_TEST_KIT_DIR;
    case 'W': return v->weft;
    default: return NULL;
    }
}

static int write_tpl(const char *path, const char *tpl, const tpl_values *v)
{
    FILE *f = fopen(path, "wx");
    if (f == NULL) {
        fprintf(stderr, "weft: cannot create %s: %s\n", path, strerror(errno));
        return -1;
    }
    for (const char *p = tpl; *p; p++) {
        const char *value = p[0] == '@' && p[1] != '\0' && p[2] == '@' ? tpl_value(p[1], v) : NULL;
        if (value != NULL) {
            fputs(value, f);
            p += 2;
        } else {
            fputc(*p, f);
        }
    }
    return fclose(f) == 0 ? 0 : -1;
}

int weft_scaffold(const char *name, const char *dir)
{
    if (!weft_name_is_valid(name)) {
        fprintf(stderr, "weft: '%s' is not a plugin name: use 1-64 characters of a-z, 0-9, '_' or '-'\n", name);
        return 2;
    }
    char ident[80];
    snprintf(ident, sizeof(ident), "%s%s", name[0] >= '0' && name[0] <= '9' ? "p_" : "", name);
    for (char *c = ident; *c; c++)
        if (*c == '-')
            *c = '_';
    /* The tests run the weft that wrote the project, unless WEFT= says otherwise. */
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    const tpl_values v = {name, ident, n > 0 ? (self[n] = '\0', self) : "weft"};
    char proj[4096], path[4200];
    if (snprintf(proj, sizeof(proj), "%s/%s", dir, name) >= (int)sizeof(proj)) {
        fprintf(stderr, "weft: %s: directory name too long\n", dir);
        return 1;
    }
    /* `weft new-plugin x plugins-dev` on a fresh clone: the parent is made
     * too, like mkdir -p (the project itself must be new). */
    for (char *slash = strchr(proj + 1, '/'); slash != NULL; slash = strchr(slash + 1, '/')) {
        *slash = '\0';
        if (mkdir(proj, 0755) != 0 && errno != EEXIST) {
            fprintf(stderr, "weft: cannot create %s: %s\n", proj, strerror(errno));
            return 1;
        }
        *slash = '/';
    }
    if (mkdir(proj, 0755) != 0) {
        fprintf(stderr, "weft: cannot create %s: %s\n", proj, strerror(errno));
        return 1;
    }
    /* whatever the umask: weft refuses plugins in group-writable places */
    chmod(proj, 0755);
    snprintf(path, sizeof(path), "%s/tests", proj);
    if (mkdir(path, 0755) != 0) {
        fprintf(stderr, "weft: cannot create %s: %s\n", path, strerror(errno));
        return 1;
    }
    struct {
        const char *file, *tpl;
    } files[] = {{"%s/%s.c", source_tpl},   {"%s/Makefile", makefile_tpl}, {"%s/%s.routes", route_tpl},
                 {"%s/README.md", readme_tpl}, {"%s/tests/%s_test.c", test_tpl}};
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        /* fits: proj is under 4096 bytes and a valid name under 65 */
        snprintf(path, sizeof(path), files[i].file, proj, name);
        if (write_tpl(path, files[i].tpl, &v) != 0)
            return 1;
    }
    printf("created %s: %s.c, %s.routes, Makefile, README.md, tests/%s_test.c\n"
           "build it:   make -C %s\n"
           "test it:    make -C %s test\n"
           "develop:    weft dev %s\n"
           "drop in:    make -C %s install PLUGIN_DIR=/path/to/plugins\n",
           proj, name, name, name, proj, proj, dir, proj);
    return 0;
}
