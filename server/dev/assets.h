/* The Dev UI's style sheet and script (inline in the page, so it works
 * offline with no external JavaScript), and its HTML escaping. */
#ifndef WEFT_DEV_ASSETS_H
#define WEFT_DEV_ASSETS_H

#include <stdio.h>

extern const char weft_dev_style[];
extern const char weft_dev_script[];
/** Text into HTML (element content or a quoted attribute value). */
void weft_dev_html_escape(FILE *f, const char *s);

#endif
