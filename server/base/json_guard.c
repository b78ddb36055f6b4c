#include "base/json_guard.h"

#include <string.h>
#include <strings.h>

int weft_json_too_deep(const char *s, size_t len, int max_depth)
{
    int depth = 0, in_string = 0;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (in_string) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_string = 0;
        } else if (c == '"') {
            in_string = 1;
        } else if (c == '[' || c == '{') {
            if (++depth > max_depth)
                return 1;
        } else if ((c == ']' || c == '}') && depth > 0) {
            depth--;
        }
    }
    return 0;
}

int weft_media_type_is(const char *value, const char *type)
{
    if (value == NULL)
        return 0;
    size_t n = strlen(type);
    value += strspn(value, " \t");
    if (strncasecmp(value, type, n) != 0)
        return 0;
    value += n;
    value += strspn(value, " \t");
    return *value == '\0' || *value == ';';
}
