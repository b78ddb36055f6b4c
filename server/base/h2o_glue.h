/*
 * The one place that includes h2o. Debian's libh2o-evloop needs
 * H2O_USE_LIBUV=0 or h2o.h pulls in uv.h; defining it here keeps every
 * translation unit consistent. Nothing in here may leak into weft/plugin.h.
 */
#ifndef WEFT_H2O_GLUE_H
#define WEFT_H2O_GLUE_H

#ifndef H2O_USE_LIBUV
#define H2O_USE_LIBUV 0
#endif
#include <h2o.h>
#include <h2o/multithread.h>
#include <h2o/socket/evloop.h>
#include <string.h>


#endif
