#include "base/dynlib.h"

#include <dlfcn.h>
#include <stdio.h>

void *weft_dynlib_open(const char *soname, const char *package, char *why, size_t why_size)
{
    void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL)
        snprintf(why, why_size, "cannot load %s (Debian package %s): %s", soname, package, dlerror());
    return h;
}

void *weft_dynlib_sym(void *h, const char *soname, const char *name, const char *hint, char *why, size_t why_size)
{
    void *p = dlsym(h, name);
    if (p == NULL)
        snprintf(why, why_size, "%s has no %s%s", soname, name, hint);
    return p;
}

void weft_dynlib_close(void *h) { dlclose(h); }
