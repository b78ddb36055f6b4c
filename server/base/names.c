#include "base/names.h"

#include <string.h>

int weft_name_is_valid(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > 64)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (i > 0 && (c == '_' || c == '-'));
        if (!ok)
            return 0;
    }
    return 1;
}
