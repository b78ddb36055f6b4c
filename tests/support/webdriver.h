/*
 * A WebDriver client (W3C protocol over HTTP, with libcurl) for driving a
 * real browser through chromedriver in the Dev UI test.
 */
#ifndef WEFT_TEST_WEBDRIVER_H
#define WEFT_TEST_WEBDRIVER_H

#include <sys/types.h>

typedef struct wt_wd {
    pid_t pid; /* chromedriver, leading its own process group; 0 when not running */
    int port;
} wt_wd;

/** Starts chromedriver on a free port below the ephemeral range with `env`, logging into `log`; fails the test if it does not come up. */
void wt_wd_start(wt_wd *d, const char *driver, char *const *env, const char *log);
/** Stops chromedriver and whatever browser it left behind. */
void wt_wd_stop(wt_wd *d);
/** One command; returns the response body (malloc'd); fails the test on an HTTP or WebDriver error. */
char *wt_wd_cmd(const wt_wd *d, const char *method, const char *path, const char *json);
/** The string value of "key":"..." in a response (no escapes in the values used here), malloc'd. */
char *wt_wd_string(const char *json, const char *key);
/** The id of the element matching a CSS selector (malloc'd). */
char *wt_wd_find(const wt_wd *d, const char *session, const char *css);
/** The text of the element matching a CSS selector (malloc'd). */
char *wt_wd_text(const wt_wd *d, const char *session, const char *css);
/** Polls an element's text until it starts with `want`; fails the test after `limit_ms`. */
void wt_wd_wait_text(const wt_wd *d, const char *session, const char *css, const char *want, double limit_ms);
/** Saves a screenshot of the session's viewport as a PNG file. */
void wt_wd_screenshot(const wt_wd *d, const char *session, const char *path);
/** Saves a screenshot of the element matching a CSS selector (scrolled into view) as a PNG file. */
void wt_wd_element_screenshot(const wt_wd *d, const char *session, const char *css, const char *path);
/** Clicks the element matching a CSS selector (an <option> selects it). */
void wt_wd_click(const wt_wd *d, const char *session, const char *css);
/** Clears an input or textarea and types `text` into it (no '"' or '\\' in text). */
void wt_wd_type(const wt_wd *d, const char *session, const char *css, const char *text);
/** An attribute of the element matching a CSS selector (malloc'd; "" when absent). */
char *wt_wd_attribute(const wt_wd *d, const char *session, const char *css, const char *name);

#endif
