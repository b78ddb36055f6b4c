/* Reading a whole (small) file: configs, project files, route fragments. */
#ifndef WEFT_FILE_H
#define WEFT_FILE_H

#include <stddef.h>

/** The file's bytes plus a NUL, malloc'd; NULL with errno set if it cannot be opened or read. */
char *weft_file_read(const char *path, size_t *len);

#endif
