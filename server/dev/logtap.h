/*
 * The Dev UI's log tail: in dev mode weft's stderr goes through a pipe whose
 * reader passes every byte on to the terminal unchanged and keeps the last
 * lines for /dev/log.
 */
#ifndef WEFT_DEV_LOGTAP_H
#define WEFT_DEV_LOGTAP_H

#include <jansson.h>

/** Puts the tap on stderr (before anything logs). Returns 0, or -1 and stderr is left as it is. */
int weft_dev_logtap_start(void);
/** Gives stderr back and stops the reader. */
void weft_dev_logtap_stop(void);
/** {"next": N, "lines": [...]}: the kept lines numbered `after` and later; pass `next` back for the rest. */
json_t *weft_dev_logtap_json(unsigned long after);

#endif
