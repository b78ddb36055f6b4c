/* Names that come from config and end up in file names or metrics labels. */
#ifndef WEFT_NAMES_H
#define WEFT_NAMES_H

/**
 * True for 1-64 characters of [a-z0-9_-] starting with a letter or digit.
 * Plugin names become file names, so anything that could be a path ("..",
 * "/") is refused here, at the single point every name passes through.
 */
int weft_name_is_valid(const char *name);

#endif
