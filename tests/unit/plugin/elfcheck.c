/*
 * Tests for server/plugin/elfcheck.c: the ELF shape checked before dlopen(),
 * because glibc maps a truncated .so without complaint and the process dies
 * with SIGBUS on the first touch of a missing page. The files are copies of
 * a real built plugin (hello.so from WEFT_PLUGIN_DIR), cut at the offsets
 * where each check takes over, or patched into foreign shapes (another
 * class, byte order, machine, object type). Each refusal is checked twice:
 * the reason weft_elf_check_fd gives, and the message weft_module_load adds
 * it to, which must name the plugin and the file the operator installed.
 */
#include "plugin/elfcheck.h"

#include <criterion/criterion.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plugin/module.h"
#include "unit.h"

#define HELLO WEFT_PLUGIN_DIR "/hello.so"

static unsigned char *image; /* hello.so's bytes */
static size_t image_size;

static void setup(void)
{
    unsetenv("WEFT_PLUGIN_PATH");
    wt_unit_setup("elfcheck");
    FILE *f = fopen(HELLO, "rb");
    cr_assert_not_null(f, "%s: %s", HELLO, strerror(errno));
    struct stat st;
    cr_assert_eq(fstat(fileno(f), &st), 0);
    image_size = (size_t)st.st_size;
    image = malloc(image_size);
    cr_assert_not_null(image);
    cr_assert_eq(fread(image, 1, image_size, f), image_size);
    fclose(f);
}

static void teardown(void)
{
    free(image);
    image = NULL;
    weft_module_cleanup();
    wt_unit_teardown();
}

TestSuite(elfcheck, .init = setup, .fini = teardown, .timeout = 60);

/* Writes `n` bytes of `bytes` to wt_tmpdir/<name>.so; returns the path (static). */
static const char *put(const char *name, const void *bytes, size_t n)
{
    static char path[512];
    snprintf(path, sizeof(path), "%s/%s.so", wt_tmpdir, name);
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "%s: %s", path, strerror(errno));
    cr_assert_eq(fwrite(bytes, 1, n, f), n);
    cr_assert_eq(fclose(f), 0);
    return path;
}

/* weft_elf_check_fd on the file: its result, the reason in `why`. */
static int check_file(const char *path, char *why, size_t size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
    why[0] = '\0';
    int rc = weft_elf_check_fd(fd, why, size);
    close(fd);
    return rc;
}

/*
 * `n` bytes of `bytes` as plugin `name` are refused with exactly `reason`,
 * both by the check and by the loader, whose one message names the plugin
 * and the installed file.
 */
static void expect_refused(const char *name, const void *bytes, size_t n, const char *reason)
{
    const char *path = put(name, bytes, n);
    char why[512];
    cr_assert_eq(check_file(path, why, sizeof(why)), -1, "%s (%zu bytes) passed the check", name, n);
    cr_assert_str_eq(why, reason, "%s (%zu bytes)", name, n);

    char *dirs[] = {wt_tmpdir};
    weft_module *m = weft_module_load(name, dirs, 1, &wt_errs);
    cr_assert_null(m, "%s was loaded", name);
    cr_assert_eq(wt_errs.count, 1, "%s:%s", name, wt_errs_text(&wt_errs));
    char want[1200];
    snprintf(want, sizeof(want), "plugin '%s' (%s): cannot load: %s", name, path, reason);
    cr_assert_str_eq(wt_errs.msgs[0], want);
    weft_errors_clear(&wt_errs);
}

/* A copy of hello.so to patch; freed by the caller. */
static unsigned char *patched(void)
{
    unsigned char *c = malloc(image_size);
    cr_assert_not_null(c);
    memcpy(c, image, image_size);
    return c;
}

static ElfW(Ehdr) *ehdr(unsigned char *b) { return (ElfW(Ehdr) *)b; }
static ElfW(Phdr) *phdr(unsigned char *b, unsigned i)
{
    return (ElfW(Phdr) *)(b + ehdr(b)->e_phoff + i * sizeof(ElfW(Phdr)));
}

/* Where the file bytes of hello.so's PT_LOAD and PT_DYNAMIC segments end: the
 * last of them, and the first segment in header order still cut by a file
 * of `cut` bytes (the one the check names), with its end. */
static unsigned long long segments_end(void)
{
    unsigned long long end = 0;
    for (unsigned i = 0; i < ehdr(image)->e_phnum; i++) {
        ElfW(Phdr) *ph = phdr(image, i);
        if ((ph->p_type == PT_LOAD || ph->p_type == PT_DYNAMIC) && ph->p_offset + ph->p_filesz > end)
            end = ph->p_offset + ph->p_filesz;
    }
    return end;
}

static unsigned first_cut(unsigned long long cut, unsigned long long *end)
{
    for (unsigned i = 0; i < ehdr(image)->e_phnum; i++) {
        ElfW(Phdr) *ph = phdr(image, i);
        *end = ph->p_offset + ph->p_filesz;
        if ((ph->p_type == PT_LOAD || ph->p_type == PT_DYNAMIC) && *end > cut)
            return i;
    }
    cr_assert_fail("no segment ends after %llu", cut);
    return 0;
}

/* ---- the real plugin, whole and cut ---- */

Test(elfcheck, the_built_plugin_passes)
{
    char why[512];
    cr_assert_eq(check_file(HELLO, why, sizeof(why)), 0, "%s", why);
    /* and so does an exact copy, so the refusals below are the cuts' and patches' doing */
    cr_assert_eq(check_file(put("copy", image, image_size), why, sizeof(why)), 0, "%s", why);
}

Test(elfcheck, cut_inside_the_identification_is_not_elf)
{
    expect_refused("empty", image, 0, "not an ELF file (0 bytes, no ELF magic)");
    expect_refused("cut3", image, 3, "not an ELF file (3 bytes, no ELF magic)");
    expect_refused("cut15", image, EI_NIDENT - 1, "not an ELF file (15 bytes, no ELF magic)");
}

Test(elfcheck, cut_inside_the_header)
{
    char reason[200];
    for (size_t n = EI_NIDENT; n < sizeof(ElfW(Ehdr)); n += 16) {
        snprintf(reason, sizeof(reason), "truncated: the ELF header needs %zu bytes, file is %zu bytes",
                 sizeof(ElfW(Ehdr)), n);
        expect_refused("cuthdr", image, n, reason);
    }
}

Test(elfcheck, cut_inside_the_program_headers)
{
    ElfW(Ehdr) *eh = ehdr(image);
    unsigned long long ph_end = eh->e_phoff + (unsigned long long)eh->e_phnum * sizeof(ElfW(Phdr));
    cr_assert_lt(ph_end, image_size);
    size_t cuts[] = {sizeof(ElfW(Ehdr)), (size_t)ph_end - 1};
    for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
        char reason[200];
        snprintf(reason, sizeof(reason), "truncated: program headers end at %llu, file is %zu bytes", ph_end, cuts[i]);
        expect_refused("cutph", image, cuts[i], reason);
    }
}

/* What the check is for: everything glibc reads is there except the tail of a segment. */
Test(elfcheck, cut_inside_a_segment)
{
    unsigned long long end = segments_end(), seg_end;
    cr_assert(end > 0 && end < image_size, "segments end at %llu of %zu bytes", end, image_size);
    ElfW(Ehdr) *eh = ehdr(image);
    unsigned long long ph_end = eh->e_phoff + (unsigned long long)eh->e_phnum * sizeof(ElfW(Phdr));
    /* the last byte missing, and the middle of every loadable segment past the headers */
    unsigned long long cuts[32] = {end - 1};
    size_t n = 1;
    for (unsigned i = 0; i < eh->e_phnum && n < 32; i++) {
        ElfW(Phdr) *ph = phdr(image, i);
        if (ph->p_type == PT_LOAD && ph->p_offset + ph->p_filesz / 2 > ph_end)
            cuts[n++] = ph->p_offset + ph->p_filesz / 2;
    }
    cr_assert_geq(n, 3, "hello.so has too few segments to cut: %zu", n);
    for (size_t k = 0; k < n; k++) {
        unsigned i = first_cut(cuts[k], &seg_end);
        const char *kind = phdr(image, i)->p_type == PT_LOAD ? "segment" : "dynamic section of segment";
        char reason[200];
        snprintf(reason, sizeof(reason), "truncated: %s %u ends at %llu, file is %llu bytes", kind, i, seg_end,
                 cuts[k]);
        expect_refused("cutseg", image, (size_t)cuts[k], reason);
    }
}

/* Every cut below the end of the segments is refused with some "truncated"
 * reason; from there on (the section headers glibc never reads) it passes. */
Test(elfcheck, every_cut_before_the_segments_end_is_refused)
{
    unsigned long long end = segments_end();
    const char *path = put("cuts", image, image_size);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    cr_assert_geq(fd, 0);
    char why[512];
    for (unsigned long long n = end + 1; n-- > EI_NIDENT;) {
        cr_assert_eq(ftruncate(fd, (off_t)n), 0);
        int rc = weft_elf_check_fd(fd, why, sizeof(why));
        if (n >= end) {
            cr_assert_eq(rc, 0, "cut at %llu (segments end at %llu): %s", n, end, why);
        } else {
            cr_assert_eq(rc, -1, "cut at %llu of %llu passed", n, end);
            cr_assert(strncmp(why, "truncated: ", 11) == 0, "cut at %llu: %s", n, why);
        }
        if (n < end && n > 4096 + sizeof(ElfW(Ehdr)))
            n -= n % 509 + 1; /* a prime stride keeps the run short but lands inside every segment */
    }
    close(fd);
}

/* ---- foreign files ---- */

Test(elfcheck, a_text_file)
{
    const char *text = "#!/bin/sh\necho this is not a plugin\n";
    char reason[100];
    snprintf(reason, sizeof(reason), "not an ELF file (%zu bytes, no ELF magic)", strlen(text));
    expect_refused("script", text, strlen(text), reason);
}

Test(elfcheck, another_class)
{
    unsigned char *c = patched();
    c[EI_CLASS] = __ELF_NATIVE_CLASS == 64 ? ELFCLASS32 : ELFCLASS64;
    char reason[100];
    snprintf(reason, sizeof(reason), "ELF class %d-bit, this server is %d-bit", __ELF_NATIVE_CLASS == 64 ? 32 : 64,
             __ELF_NATIVE_CLASS);
    expect_refused("class", c, image_size, reason);
    /* the class is checked before the size: a 32-bit header is shorter */
    expect_refused("class", c, 20, reason);
    free(c);
}

Test(elfcheck, another_byte_order)
{
    unsigned char *c = patched();
    c[EI_DATA] = c[EI_DATA] == ELFDATA2LSB ? ELFDATA2MSB : ELFDATA2LSB;
    expect_refused("order", c, image_size, "wrong byte order for this machine");
    free(c);
}

Test(elfcheck, another_machine)
{
#if defined(__x86_64__) || defined(__aarch64__)
    unsigned char *c = patched();
    unsigned native = ehdr(c)->e_machine;
    ehdr(c)->e_machine = native == EM_X86_64 ? EM_AARCH64 : EM_X86_64;
    char reason[200];
    snprintf(reason, sizeof(reason), "built for another machine (ELF machine %u, this server is %u)",
             (unsigned)ehdr(c)->e_machine, native);
    expect_refused("arch", c, image_size, reason);
    free(c);
#else
    cr_skip_test("no second machine to pretend to be on this architecture");
#endif
}

Test(elfcheck, not_a_shared_object)
{
    static const struct {
        unsigned type;
        const char *reason;
    } cases[] = {
        {ET_EXEC, "an executable, not a shared object: link it with -shared"},
        {ET_REL, "a relocatable object (.o), not a shared object: link it with -shared"},
        {ET_CORE, "a core dump, not a shared object"},
        {ET_NONE, "not a shared object"},
    };
    unsigned char *c = patched();
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ehdr(c)->e_type = (ElfW(Half))cases[i].type;
        expect_refused("type", c, image_size, cases[i].reason);
    }
    free(c);
}

/* A real executable: a PIE is ET_DYN, so it passes the shape check and
 * dlopen's own refusal (glibc 2.30 and later) is what the operator reads;
 * one linked without -pie is refused by the check. */
Test(elfcheck, the_server_binary_as_a_plugin)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/server.so", wt_tmpdir);
    wt_copy_file(WEFT_BIN, path);
    unsigned char head[sizeof(ElfW(Ehdr))];
    FILE *f = fopen(path, "rb");
    cr_assert(f != NULL && fread(head, 1, sizeof(head), f) == sizeof(head));
    fclose(f);
    char why[512];
    int rc = check_file(path, why, sizeof(why));
    char *dirs[] = {wt_tmpdir};
    cr_assert_null(weft_module_load("server", dirs, 1, &wt_errs), "the server binary was loaded as a plugin");
    cr_assert_eq(wt_errs.count, 1, "%s", wt_errs_text(&wt_errs));
    char want[700];
    if (ehdr(head)->e_type == ET_DYN) {
        cr_assert_eq(rc, 0, "a PIE has a shared object's shape: %s", why);
        snprintf(want, sizeof(want), "plugin 'server' (%s): cannot load: ", path);
        wt_expect_msg(&wt_errs, want, "position-independent executable");
    } else {
        cr_assert_eq(rc, -1);
        snprintf(want, sizeof(want), "plugin 'server' (%s): cannot load: an executable, not a shared object", path);
        wt_expect_msg(&wt_errs, want);
    }
}

/* ---- malformed headers ---- */

Test(elfcheck, malformed_program_headers)
{
    unsigned char *c = patched();
    ehdr(c)->e_phnum = 0;
    char reason[100];
    snprintf(reason, sizeof(reason), "malformed: 0 program headers of %zu bytes", sizeof(ElfW(Phdr)));
    expect_refused("phnum", c, image_size, reason);

    memcpy(c, image, image_size);
    ehdr(c)->e_phentsize = 32;
    snprintf(reason, sizeof(reason), "malformed: %u program headers of 32 bytes", (unsigned)ehdr(c)->e_phnum);
    expect_refused("phent", c, image_size, reason);
    free(c);
}

Test(elfcheck, malformed_segments)
{
    unsigned char *c = patched();
    unsigned first = 0;
    while (phdr(c, first)->p_type != PT_LOAD)
        first++;

    phdr(c, first)->p_memsz = phdr(c, first)->p_filesz - 1;
    char reason[120];
    snprintf(reason, sizeof(reason), "malformed: segment %u has more bytes in the file than in memory", first);
    expect_refused("memsz", c, image_size, reason);

    /* an offset that wraps around must not pass as "inside the file" */
    memcpy(c, image, image_size);
    phdr(c, first)->p_offset = ~(ElfW(Off))0 - 1;
    cr_assert_geq(phdr(c, first)->p_filesz, 2);
    char why[512];
    cr_assert_eq(check_file(put("wrap", c, image_size), why, sizeof(why)), -1, "a wrapping segment passed");
    snprintf(reason, sizeof(reason), "truncated: segment %u ends at ", first);
    cr_assert(strncmp(why, reason, strlen(reason)) == 0, "%s", why);

    memcpy(c, image, image_size);
    for (unsigned i = 0; i < ehdr(c)->e_phnum; i++)
        if (phdr(c, i)->p_type == PT_LOAD)
            phdr(c, i)->p_type = PT_NOTE;
    expect_refused("noload", c, image_size, "malformed: no loadable segment");
    free(c);
}

/* ---- the caller's side ---- */

Test(elfcheck, a_bad_descriptor_and_a_short_reason_buffer)
{
    char why[512];
    cr_assert_eq(weft_elf_check_fd(-1, why, sizeof(why)), -1);
    cr_assert_str_eq(why, "cannot stat: Bad file descriptor");

    const char *path = put("short", image, 100);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    cr_assert_geq(fd, 0);
    char small[12];
    memset(small, 'x', sizeof(small));
    cr_assert_eq(weft_elf_check_fd(fd, small, sizeof(small)), -1);
    cr_assert_str_eq(small, "truncated: ", "the reason is cut to the buffer, NUL-terminated");
    close(fd);
}
