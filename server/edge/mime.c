#include "edge/mime.h"

#include <stdio.h>
#include <string.h>

/* One line is "type ext ext ..."; '#' starts a comment. */
static void define_line(h2o_mimemap_t *map, char *line)
{
    char *save = NULL;
    char *hash = strchr(line, '#');
    if (hash != NULL)
        *hash = '\0';
    const char *type = strtok_r(line, " \t\r\n", &save);
    /* A type has a '/': anything else is not a line of this format. */
    if (type == NULL || strchr(type, '/') == NULL)
        return;
    for (const char *ext; (ext = strtok_r(NULL, " \t\r\n", &save)) != NULL;)
        h2o_mimemap_define_mimetype(map, ext, type, NULL);
}

h2o_mimemap_t *weft_mime_load(const char *file)
{
    h2o_mimemap_t *map = h2o_mimemap_create();
    FILE *f = fopen(file, "re");
    if (f == NULL)
        return map;
    char line[1024];
    while (fgets(line, sizeof(line), f) != NULL)
        define_line(map, line);
    fclose(f);
    return map;
}
