/* `weft new-plugin NAME [DIR]`: a ready-to-build plugin project. */
#ifndef WEFT_SCAFFOLD_H
#define WEFT_SCAFFOLD_H

/** Writes DIR/NAME/{NAME.c, Makefile, route.conf, README.md, tests/NAME_test.c}; returns a process exit code. */
int weft_scaffold(const char *name, const char *dir);

/** The compiler flags that find weft/plugin.h: pkg-config's, else this build's SDK directory. */
const char *weft_sdk_cflags(void);

#endif
