#include "base/file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

char *weft_file_read(const char *path, size_t *len)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return NULL;
    char *text = NULL;
    size_t n_text = 0;
    FILE *mem = open_memstream(&text, &n_text);
    if (mem == NULL) {
        fclose(f);
        return NULL;
    }
    char buf[8192];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
        fwrite(buf, 1, n, mem);
    int failed = ferror(f) ? (errno != 0 ? errno : EIO) : 0;
    fclose(f);
    if (fclose(mem) != 0 && failed == 0)
        failed = ENOMEM;
    if (failed) {
        free(text);
        errno = failed;
        return NULL;
    }
    if (len != NULL)
        *len = n_text;
    return text;
}
