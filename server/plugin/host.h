/* The host function table handed to every plugin's init(). */
#ifndef WEFT_HOST_H
#define WEFT_HOST_H

#include <weft/plugin.h>

extern const weft_host weft_host_table;

#endif
