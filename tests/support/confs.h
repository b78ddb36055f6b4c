/*
 * Config fragments the integration tests share, as string-literal macros to
 * paste into a config: one spelling of the test listeners and of the routes
 * many suites declare. None ends with a newline, so a config keeps its line
 * numbers (tests assert FILE:LINE in messages) whichever it uses.
 */
#ifndef WEFT_TEST_CONFS_H
#define WEFT_TEST_CONFS_H

/** The main listener on an ephemeral loopback port (the harness reads the port from the log). */
#define WT_LISTEN "listen = [\"127.0.0.1:0\"];"
/** The admin listener, likewise. */
#define WT_ADMIN "admin = { listen = \"127.0.0.1:0\"; };"

/** One route; `extra` is pasted before the closing brace (e.g. " options = { ms = 5; };"). */
#define WT_ROUTE(path, plugin, policy, extra)                                                                     \
    "  { path = \"" path "\"; plugin = \"" plugin "\"; dispatch = \"" policy "\";" extra " }"
/** The same route under each policy: "/pool" suffix, "/coroutine" suffix, "/reactive" suffix, one a line. */
#define WT_EACH_POLICY(suffix, plugin, extra)                                                                     \
    WT_ROUTE("/pool" suffix, plugin, "pool", extra) ",\n" WT_ROUTE("/coroutine" suffix, plugin, "coroutine", extra) \
    ",\n" WT_ROUTE("/reactive" suffix, plugin, "reactive", extra)
/** GET /hello → "hello", the route most suites need for "the server still serves". */
#define WT_HELLO_ROUTE WT_ROUTE("/hello", "hello", "reactive", "")
/** A routes list of WT_HELLO_ROUTE alone. */
#define WT_HELLO_ROUTES "routes = (" WT_HELLO_ROUTE ");"

/** The persons plugin's four routes under "/" p with dispatch p; `last` follows the last one ("," or ""). */
#define WT_PERSON_ROUTES(p, last)                                                                           \
    "  { path = \"/" p "/persons\"; methods = [\"GET\", \"POST\"]; plugin = \"persons\"; dispatch = \"" p \
    "\"; },\n"                                                                                              \
    "  { path = \"/" p "/persons/{id}\"; methods = [\"GET\", \"DELETE\"]; plugin = \"persons\"; "           \
    "dispatch = \"" p "\"; },\n"                                                                            \
    "  { path = \"/" p "/persons/name/{name}\"; methods = [\"GET\"]; plugin = \"persons\"; dispatch = \""   \
    p "\"; },\n"                                                                                            \
    "  { path = \"/" p "/persons/age-greater-than/{age}\"; methods = [\"GET\"]; plugin = \"persons\"; "     \
    "dispatch = \"" p "\"; }" last "\n"

#endif
