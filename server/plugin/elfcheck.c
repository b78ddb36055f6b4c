#include "plugin/elfcheck.h"

#include <elf.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__x86_64__)
#define WEFT_ELF_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define WEFT_ELF_MACHINE EM_AARCH64
#elif defined(__i386__)
#define WEFT_ELF_MACHINE EM_386
#elif defined(__arm__)
#define WEFT_ELF_MACHINE EM_ARM
#elif defined(__riscv)
#define WEFT_ELF_MACHINE EM_RISCV
#elif defined(__powerpc64__)
#define WEFT_ELF_MACHINE EM_PPC64
#elif defined(__s390x__)
#define WEFT_ELF_MACHINE EM_S390
#endif

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define WEFT_ELF_DATA ELFDATA2LSB
#else
#define WEFT_ELF_DATA ELFDATA2MSB
#endif

static int read_at(int fd, void *buf, size_t n, off_t at)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(fd, (char *)buf + got, n - got, at + (off_t)got);
        if (r <= 0)
            return -1;
        got += (size_t)r;
    }
    return 0;
}

static const char *type_name(unsigned t)
{
    switch (t) {
    case ET_REL:
        return "a relocatable object (.o), not a shared object: link it with -shared";
    case ET_EXEC:
        return "an executable, not a shared object: link it with -shared";
    case ET_CORE:
        return "a core dump, not a shared object";
    default:
        return "not a shared object";
    }
}

int weft_elf_check_fd(int fd, char *why, size_t size)
{
    struct stat st;
    if (fstat(fd, &st) != 0) {
        snprintf(why, size, "cannot stat: %m");
        return -1;
    }
    unsigned long long fsize = (unsigned long long)st.st_size;
    ElfW(Ehdr) eh;
    if (fsize < EI_NIDENT || read_at(fd, eh.e_ident, EI_NIDENT, 0) != 0 || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) {
        snprintf(why, size, "not an ELF file (%llu bytes, no ELF magic)", fsize);
        return -1;
    }
    if (eh.e_ident[EI_CLASS] != (__ELF_NATIVE_CLASS == 64 ? ELFCLASS64 : ELFCLASS32)) {
        snprintf(why, size, "ELF class %d-bit, this server is %d-bit", eh.e_ident[EI_CLASS] == ELFCLASS32 ? 32 : 64,
                 __ELF_NATIVE_CLASS);
        return -1;
    }
    if (eh.e_ident[EI_DATA] != WEFT_ELF_DATA) {
        snprintf(why, size, "wrong byte order for this machine");
        return -1;
    }
    if (fsize < sizeof(eh)) {
        snprintf(why, size, "truncated: the ELF header needs %zu bytes, file is %llu bytes", sizeof(eh), fsize);
        return -1;
    }
    if (read_at(fd, &eh, sizeof(eh), 0) != 0) {
        snprintf(why, size, "cannot read the ELF header: %m");
        return -1;
    }
#ifdef WEFT_ELF_MACHINE
    if (eh.e_machine != WEFT_ELF_MACHINE) {
        snprintf(why, size, "built for another machine (ELF machine %u, this server is %u)", (unsigned)eh.e_machine,
                 (unsigned)WEFT_ELF_MACHINE);
        return -1;
    }
#endif
    if (eh.e_type != ET_DYN) {
        snprintf(why, size, "%s", type_name(eh.e_type));
        return -1;
    }
    if (eh.e_phnum == 0 || eh.e_phentsize != sizeof(ElfW(Phdr))) {
        snprintf(why, size, "malformed: %u program headers of %u bytes", (unsigned)eh.e_phnum,
                 (unsigned)eh.e_phentsize);
        return -1;
    }
    unsigned long long ph_end = (unsigned long long)eh.e_phoff + (unsigned long long)eh.e_phnum * sizeof(ElfW(Phdr));
    if (ph_end > fsize) {
        snprintf(why, size, "truncated: program headers end at %llu, file is %llu bytes", ph_end, fsize);
        return -1;
    }
    int loads = 0;
    for (unsigned i = 0; i < eh.e_phnum; i++) {
        ElfW(Phdr) ph;
        if (read_at(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + i * sizeof(ph))) != 0) {
            snprintf(why, size, "cannot read program header %u: %m", i);
            return -1;
        }
        if (ph.p_type != PT_LOAD && ph.p_type != PT_DYNAMIC)
            continue;
        unsigned long long end = (unsigned long long)ph.p_offset + ph.p_filesz;
        if (end < ph.p_offset || end > fsize) {
            snprintf(why, size, "truncated: %s %u ends at %llu, file is %llu bytes",
                     ph.p_type == PT_LOAD ? "segment" : "dynamic section of segment", i, end, fsize);
            return -1;
        }
        if (ph.p_type == PT_LOAD) {
            if (ph.p_filesz > ph.p_memsz) {
                snprintf(why, size, "malformed: segment %u has more bytes in the file than in memory", i);
                return -1;
            }
            loads++;
        }
    }
    if (loads == 0) {
        snprintf(why, size, "malformed: no loadable segment");
        return -1;
    }
    return 0;
}
