/*
 * A plugin file's ELF shape, checked before dlopen(): glibc maps loadable
 * segments without checking them against the file's size, so a truncated
 * .so (an interrupted copy, a full disk) is "loaded" fine and the process
 * dies with SIGBUS when the missing page is first touched.
 */
#ifndef WEFT_ELFCHECK_H
#define WEFT_ELFCHECK_H

#include <stddef.h>

/**
 * Checks the file open on `fd`: an ELF shared object of this host's class,
 * byte order and machine whose program headers and loadable segments lie
 * inside the file. Returns 0, or -1 with the reason in `why` ("truncated:
 * segment 2 ends at 24576, file is 8000 bytes").
 */
int weft_elf_check_fd(int fd, char *why, size_t size);

#endif
