/* The Dev UI's style sheet and script: inline in the page, so it works offline with no external JavaScript. */
#ifndef WEFT_DEV_ASSETS_H
#define WEFT_DEV_ASSETS_H

extern const char weft_dev_style[];
extern const char weft_dev_script[];

#endif
