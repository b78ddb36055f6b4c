/* SHA256_Init and friends are deprecated in OpenSSL 3 in favour of EVP, but
 * EVP's first digest initialises the whole provider machinery: 2 MiB of
 * libcrypto made resident and milliseconds of start-up, for one hash of a
 * few KiB per plugin. The one-shot functions compute the same digest. */
#define OPENSSL_SUPPRESS_DEPRECATED
#include "plugin/module.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/sha.h>

#include "base/log.h"
#include "base/names.h"
#include "base/plugin_path.h"
#include "base/trust.h"
#include "plugin/elfcheck.h"

WEFT_ROUTE_SLOT(weft_module_route_slot)

int weft_descriptor_check(const void *desc, size_t size_avail, const char *expected_name, char *why, size_t size)
{
    const weft_plugin *d = desc;
    if (d == NULL) {
        snprintf(why, size, "weft_plugin_entry() returned NULL");
        return -1;
    }
    if (size_avail < offsetof(weft_plugin, name)) {
        snprintf(why, size, "descriptor is truncated");
        return -1;
    }
    if (d->magic != WEFT_PLUGIN_MAGIC) {
        snprintf(why, size, "bad magic 0x%08x (expected 0x%08x): not a weft plugin descriptor", d->magic,
                 WEFT_PLUGIN_MAGIC);
        return -1;
    }
    /* ABI 1 plugins keep loading: route_init.c hands them the flat table. */
    if (d->abi_version != WEFT_PLUGIN_ABI && d->abi_version != 1) {
        snprintf(why, size,
                 "plugin ABI mismatch: the plugin was built for plugin ABI %u, this server speaks ABI %u (and "
                 "still loads ABI 1); rebuild it against this server's weft/plugin.h",
                 d->abi_version, WEFT_PLUGIN_ABI);
        return -1;
    }
    if (d->struct_size < WEFT_PLUGIN_MIN_SIZE || d->struct_size > size_avail) {
        snprintf(why, size, "descriptor size %u is invalid: plugin ABI %u descriptors are at least %zu bytes",
                 d->struct_size, d->abi_version, (size_t)WEFT_PLUGIN_MIN_SIZE);
        return -1;
    }
    if (d->flags != 0) {
        snprintf(why, size, "descriptor flags 0x%x are not understood by this server (expected 0)", d->flags);
        return -1;
    }
    if (d->name == NULL || !weft_name_is_valid(d->name)) {
        snprintf(why, size, "descriptor has no valid name");
        return -1;
    }
    if (expected_name != NULL && strcmp(d->name, expected_name) != 0) {
        snprintf(why, size,
                 "declares the name '%s' but was loaded as '%s': a plugin must live in <name>.so, and two plugins "
                 "cannot share a name",
                 d->name, expected_name);
        return -1;
    }
    if (d->handle == NULL && d->handle_async == NULL) {
        snprintf(why, size, "descriptor has neither handle nor handle_async");
        return -1;
    }
    return 0;
}

/* `problem` keeps the first reason other than "absent" (a symlink loop, a
 * directory where the file should be), so "not found" is never said of a
 * file that is there but unusable. */
static int try_dir(const char *dir, size_t dlen, const char *name, char *out, size_t size, char *problem,
                   size_t psize)
{
    if (dlen == 0)
        return -1;
    int n = snprintf(out, size, "%.*s/%s.so", (int)dlen, dir, name);
    struct stat st;
    if (n <= 0 || (size_t)n >= size)
        return -1;
    if (stat(out, &st) == 0)
        return S_ISREG(st.st_mode) ? 0 : -1;
    if (problem != NULL && problem[0] == '\0') {
        if (errno == ELOOP)
            snprintf(problem, psize, "%s is a symlink loop (ELOOP: too many levels of symbolic links)", out);
        else if (errno != ENOENT && errno != ENOTDIR)
            snprintf(problem, psize, "%s: %s", out, strerror(errno));
        else if (lstat(out, &st) == 0 && S_ISLNK(st.st_mode))
            snprintf(problem, psize, "%s is a dangling symlink", out);
    }
    return -1;
}

static int find_why(const char *name, char *const *dirs, size_t n_dirs, char *out, size_t size, char *problem,
                    size_t psize)
{
    weft_plugin_path sp;
    weft_plugin_path_init(&sp, dirs, n_dirs);
    int rc = -1;
    for (size_t i = 0; i < sp.n && rc != 0; i++)
        rc = try_dir(sp.dirs[i], strlen(sp.dirs[i]), name, out, size, problem, psize);
    weft_plugin_path_free(&sp);
    return rc;
}

int weft_module_find(const char *name, char *const *dirs, size_t n_dirs, char *out, size_t size)
{
    return find_why(name, dirs, n_dirs, out, size, NULL, 0);
}

static pthread_mutex_t registry_mu = PTHREAD_MUTEX_INITIALIZER;
static weft_module *registry;
static char private_dir[256];
static int private_dir_owned; /* a probe child borrows its parent's */

static int ensure_private_dir(void)
{
    if (private_dir[0] != '\0')
        return 0;
    const char *lent = getenv("WEFT_PROBE_DIR");
    if (lent != NULL && *lent) {
        snprintf(private_dir, sizeof(private_dir), "%s", lent);
        return 0;
    }
    const char *base = getenv("RUNTIME_DIRECTORY"); /* systemd's RuntimeDirectory= */
    if (base == NULL || *base == '\0')
        base = getenv("TMPDIR");
    if (base == NULL || *base == '\0')
        base = "/tmp";
    snprintf(private_dir, sizeof(private_dir), "%s/weft-plugins-XXXXXX", base);
    if (mkdtemp(private_dir) == NULL) {
        private_dir[0] = '\0';
        return -1;
    }
    private_dir_owned = 1;
    return 0;
}

const char *weft_module_private_dir(void) { return ensure_private_dir() == 0 ? private_dir : NULL; }

void weft_module_chown_private(uid_t uid, gid_t gid)
{
    if (private_dir[0] != '\0' && chown(private_dir, uid, gid) != 0)
        weft_log_warn("cannot hand %s to uid %u: %s", private_dir, (unsigned)uid, strerror(errno));
}

void weft_module_cleanup(void)
{
    if (private_dir[0] != '\0' && private_dir_owned)
        rmdir(private_dir);
    private_dir[0] = '\0';
    private_dir_owned = 0;
}

/* Copies `src` to a fresh private file; returns its path in `out` and the
 * SHA-256 of its bytes in `hex` (what a crash record names). */
static int private_copy(const char *src, const struct stat *checked, const char *name, char *out, size_t size,
                        char *hex, char *why, size_t wsize)
{
    static atomic_uint counter;
    if (ensure_private_dir() != 0) {
        snprintf(why, wsize, "cannot create a private directory for plugin copies: %s", strerror(errno));
        return -1;
    }
    /* the pid: a probe child copies into the same directory */
    snprintf(out, size, "%s/%s.%d.%u.so", private_dir, name, (int)getpid(), atomic_fetch_add(&counter, 1));
    int in = open(src, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    /* The file read must be the file checked, not one swapped in since. */
    struct stat now;
    if (in >= 0 && (fstat(in, &now) != 0 || now.st_dev != checked->st_dev || now.st_ino != checked->st_ino)) {
        close(in);
        in = -1;
        errno = ESTALE;
    }
    int o = in >= 0 ? open(out, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0700) : -1;
    SHA256_CTX md;
    int ok = in >= 0 && o >= 0 && SHA256_Init(&md) == 1;
    char buf[65536];
    ssize_t n;
    while (ok && (n = read(in, buf, sizeof(buf))) != 0) {
        if (n < 0 || write(o, buf, (size_t)n) != n || SHA256_Update(&md, buf, (size_t)n) != 1)
            ok = 0;
    }
    unsigned char dig[SHA256_DIGEST_LENGTH];
    if (ok && SHA256_Final(dig, &md) == 1)
        for (unsigned i = 0; i < SHA256_DIGEST_LENGTH; i++)
            snprintf(hex + 2 * i, 3, "%02x", dig[i]);
    if (!ok)
        snprintf(why, wsize, "cannot copy %s to %s: %s", src, out, strerror(errno));
    if (in >= 0)
        close(in);
    if (o >= 0 && close(o) != 0)
        ok = 0;
    if (!ok)
        unlink(out);
    return ok ? 0 : -1;
}

/* Private copies made ahead of a forked probe child: the child loads these
 * very files and leaves them, the server then loads them too. One copy
 * instead of two, and the bytes the probe ran are the bytes the server
 * maps, even if the original is replaced in between. */
typedef struct prepared {
    struct prepared *next;
    char *name, *real;
    struct stat st;
    char copy[512], hash[65];
} prepared;
static prepared *prepared_list;
static int prepared_keep; /* in the probe child: the files are the parent's */

void weft_module_prepare(const char *name, char *const *dirs, size_t n_dirs)
{
    char path[4096], real[4096], why[1024];
    prepared *p = calloc(1, sizeof(*p));
    if (p == NULL || !weft_name_is_valid(name) ||
        find_why(name, dirs, n_dirs, path, sizeof(path), NULL, 0) != 0 ||
        weft_file_trusted("plugin", path, real, &p->st, why, sizeof(why)) != 0 ||
        private_copy(real, &p->st, name, p->copy, sizeof(p->copy), p->hash, why, sizeof(why)) != 0) {
        free(p); /* the load that follows finds the same problem and says so */
        return;
    }
    p->name = strdup(name);
    p->real = strdup(real);
    if (p->name == NULL || p->real == NULL) {
        unlink(p->copy);
        free(p->name);
        free(p->real);
        free(p);
        return;
    }
    p->next = prepared_list;
    prepared_list = p;
}

void weft_module_prepared_keep(void) { prepared_keep = 1; }

static void prepared_free(prepared *p)
{
    free(p->name);
    free(p->real);
    free(p);
}

void weft_module_prepared_drop(void)
{
    while (prepared_list != NULL) {
        prepared *p = prepared_list;
        prepared_list = p->next;
        if (!prepared_keep)
            unlink(p->copy);
        prepared_free(p);
    }
}

static prepared *prepared_take(const char *name, const char *real)
{
    for (prepared **pp = &prepared_list; *pp != NULL; pp = &(*pp)->next) {
        prepared *p = *pp;
        if (strcmp(p->name, name) == 0 && strcmp(p->real, real) == 0) {
            *pp = p->next;
            return p;
        }
    }
    return NULL;
}

static int same_file(const weft_module *m, const char *path, const struct stat *st)
{
    return strcmp(m->path, path) == 0 && m->dev == st->st_dev && m->ino == st->st_ino && m->size == st->st_size &&
           m->mtime.tv_sec == st->st_mtim.tv_sec && m->mtime.tv_nsec == st->st_mtim.tv_nsec;
}

int weft_module_is_loaded(const char *name, char *const *dirs, size_t n_dirs)
{
    char path[4096], real[4096];
    struct stat st;
    if (find_why(name, dirs, n_dirs, path, sizeof(path), NULL, 0) != 0 || realpath(path, real) == NULL ||
        stat(real, &st) != 0)
        return 0;
    int found = 0;
    pthread_mutex_lock(&registry_mu);
    for (weft_module *m = registry; m != NULL && !found; m = m->next)
        found = strcmp(m->name, name) == 0 && same_file(m, path, &st);
    pthread_mutex_unlock(&registry_mu);
    return found;
}

/* Finds NAME.so along the search order into `path`; otherwise says why, a
 * file that is there but unusable first, then where it was looked for. */
static int locate(const char *name, char *const *dirs, size_t n_dirs, char *path, size_t size, weft_errors *errs)
{
    char problem[1200] = "";
    if (find_why(name, dirs, n_dirs, path, size, problem, sizeof(problem)) == 0)
        return 0;
    if (problem[0] != '\0') {
        weft_errors_add(errs, "plugin '%s': %s", name, problem);
        return -1;
    }
    char searched[1024];
    weft_plugin_path sp;
    weft_plugin_path_init(&sp, dirs, n_dirs);
    weft_plugin_path_format(&sp, searched, sizeof(searched));
    weft_plugin_path_free(&sp);
    weft_errors_add(errs, "plugin '%s': %s.so not found in %s", name, name,
                    searched[0] ? searched : "(no plugin_dirs configured and WEFT_PLUGIN_PATH unset)");
    return -1;
}

/* The same file loaded already is shared (retained); another build of it is
 * loaded anew, numbered past every earlier load in `*seq`. */
static weft_module *registry_find(const char *name, const char *path, const struct stat *st, unsigned *seq)
{
    pthread_mutex_lock(&registry_mu);
    *seq = 1;
    for (weft_module *m = registry; m != NULL; m = m->next) {
        if (strcmp(m->name, name) != 0)
            continue;
        if (same_file(m, path, st)) {
            weft_module_retain(m);
            pthread_mutex_unlock(&registry_mu);
            return m;
        }
        if (m->seq >= *seq)
            *seq = m->seq + 1;
    }
    pthread_mutex_unlock(&registry_mu);
    return NULL;
}

/* The private copy to map: the one made for the probe if there is one (in a
 * probe child, `*keep`: it is the parent's to remove), else a fresh one. */
static int take_copy(const char *name, const char *path, const char *real, struct stat *st, char *copy, size_t csize,
                     char *hash, int *keep, char *why, size_t wsize, weft_errors *errs)
{
    prepared *pre = prepared_take(name, real);
    *keep = pre != NULL && prepared_keep;
    if (pre != NULL) {
        snprintf(copy, csize, "%s", pre->copy);
        memcpy(hash, pre->hash, sizeof(pre->hash));
        *st = pre->st; /* the identity of the bytes copied (and probed) */
        prepared_free(pre);
    } else if (private_copy(real, st, name, copy, csize, hash, why, wsize) != 0) {
        weft_errors_add(errs, "plugin '%s' (%s): %s", name, path, why);
        return -1;
    }
    return 0;
}

/* The copy is what gets mapped, and nobody else can write it: checking
 * it (not the original) leaves no window for a swap in between. */
static int check_copy(const char *name, const char *path, const char *copy, int keep, char *why, size_t wsize,
                      weft_errors *errs)
{
    int cfd = open(copy, O_RDONLY | O_CLOEXEC);
    int elf_ok = cfd >= 0 && weft_elf_check_fd(cfd, why, wsize) == 0;
    if (cfd < 0)
        snprintf(why, wsize, "cannot open the private copy %s: %s", copy, strerror(errno));
    if (cfd >= 0)
        close(cfd);
    if (!elf_ok) {
        if (!keep)
            unlink(copy);
        weft_errors_add(errs, "plugin '%s' (%s): cannot load: %s", name, path, why);
        return -1;
    }
    return 0;
}

static void *map_copy(const char *name, const char *path, const char *copy, int keep, weft_errors *errs)
{
    /* RTLD_NOW: a missing symbol is a clean error here, not a crash mid-request.
     * RTLD_LOCAL: a plugin's symbols never satisfy another plugin's. */
    void *dl = dlopen(copy, RTLD_NOW | RTLD_LOCAL);
    if (!keep)
        unlink(copy); /* the mapping stays; nothing else may open the copy */
    if (dl == NULL) {
        const char *e = dlerror();
        /* dlerror names the private copy; the operator knows the original. */
        const char *colon = e != NULL ? strstr(e, ".so: ") : NULL;
        weft_errors_add(errs, "plugin '%s' (%s): cannot load: %s", name, path,
                        colon != NULL ? colon + 5 : (e != NULL ? e : "unknown error"));
    }
    return dl;
}

/* The mapped plugin's checked descriptor, and in `*base` where its image
 * lies; NULL (the mapping closed) for a plugin that is refused. */
static const weft_plugin *descriptor_of(void *dl, const char *name, const char *path, void **base, char *why,
                                        size_t wsize, weft_errors *errs)
{
    weft_plugin_entry_fn entry;
    *(void **)&entry = dlsym(dl, WEFT_PLUGIN_ENTRY_SYMBOL);
    if (entry == NULL) {
        weft_errors_add(errs, "plugin '%s' (%s): missing descriptor: no %s() function exported", name, path,
                        WEFT_PLUGIN_ENTRY_SYMBOL);
        dlclose(dl);
        return NULL;
    }
    const weft_plugin *d = entry();
    /* A descriptor (and its name) must lie in the plugin's own image; a
     * garbage pointer is refused here rather than dereferenced. */
    Dl_info self, at;
    if (dladdr(*(void **)&entry, &self) == 0 || d == NULL || dladdr(d, &at) == 0 || at.dli_fbase != self.dli_fbase ||
        (d->name != NULL && (dladdr(d->name, &at) == 0 || at.dli_fbase != self.dli_fbase))) {
        weft_errors_add(errs, "plugin '%s' (%s): refused: its descriptor or name does not point into the plugin",
                        name, path);
        dlclose(dl);
        return NULL;
    }
    if (weft_descriptor_check(d, SIZE_MAX, name, why, wsize) != 0) {
        weft_errors_add(errs, "plugin '%s' (%s): refused: %s", name, path, why);
        dlclose(dl);
        return NULL;
    }
    *base = self.dli_fbase;
    return d;
}

/* `st` and `hash` are the copy's: what same_file and a crash record compare. */
static weft_module *registry_add(const weft_plugin *d, const char *name, const char *path, void *dl, void *base,
                                 unsigned seq, const struct stat *st, const char *hash)
{
    weft_module *m = calloc(1, sizeof(*m));
    if (m == NULL)
        weft_fatal("out of memory");
    memcpy(&m->desc, d, d->struct_size < sizeof(m->desc) ? d->struct_size : sizeof(m->desc));
    m->name = strdup(name);
    m->path = strdup(path);
    m->dl = dl;
    m->base = base;
    m->seq = seq;
    m->dev = st->st_dev;
    m->ino = st->st_ino;
    m->size = st->st_size;
    m->mtime = st->st_mtim;
    m->loaded_at = time(NULL);
    memcpy(m->sha256, hash, sizeof(m->sha256));
    atomic_init(&m->refs, 1);
    pthread_mutex_lock(&registry_mu);
    m->next = registry;
    registry = m;
    pthread_mutex_unlock(&registry_mu);
    return m;
}

weft_module *weft_module_load(const char *name, char *const *dirs, size_t n_dirs, weft_errors *errs)
{
    char path[4096], why[10240];
    if (!weft_name_is_valid(name)) {
        weft_errors_add(errs, "plugin '%s': invalid plugin name", name);
        return NULL;
    }
    if (locate(name, dirs, n_dirs, path, sizeof(path), errs) != 0)
        return NULL;
    struct stat st;
    char real[4096];
    if (weft_file_trusted("plugin", path, real, &st, why, sizeof(why)) != 0) {
        weft_errors_add(errs, "plugin '%s' (%s): refused: %s", name, path, why);
        return NULL;
    }
    unsigned seq;
    weft_module *m = registry_find(name, path, &st, &seq);
    if (m != NULL)
        return m;

    char copy[512], hash[65] = "";
    int keep;
    if (take_copy(name, path, real, &st, copy, sizeof(copy), hash, &keep, why, sizeof(why), errs) != 0 ||
        check_copy(name, path, copy, keep, why, sizeof(why), errs) != 0)
        return NULL;
    void *dl = map_copy(name, path, copy, keep, errs);
    if (dl == NULL)
        return NULL;
    void *base;
    const weft_plugin *d = descriptor_of(dl, name, path, &base, why, sizeof(why), errs);
    if (d == NULL)
        return NULL;
    m = registry_add(d, name, path, dl, base, seq, &st, hash);
    weft_log_debug("plugin '%s' %s (load #%u) loaded from %s", name, d->version ? d->version : "?", seq, path);
    return m;
}

void weft_module_retain(weft_module *m) { atomic_fetch_add(&m->refs, 1); }

void weft_module_release(weft_module *m)
{
    if (m == NULL || atomic_fetch_sub(&m->refs, 1) != 1)
        return;
    pthread_mutex_lock(&registry_mu);
    for (weft_module **pp = &registry; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == m) {
            *pp = m->next;
            break;
        }
    }
    pthread_mutex_unlock(&registry_mu);
    weft_log_debug("plugin '%s' load #%u unloaded", m->name, m->seq);
    dlclose(m->dl);
    free(m->name);
    free(m->path);
    free(m);
}

void weft_module_foreach(void (*fn)(const weft_module *m, void *ctx), void *ctx)
{
    pthread_mutex_lock(&registry_mu);
    for (weft_module *m = registry; m != NULL; m = m->next)
        fn(m, ctx);
    pthread_mutex_unlock(&registry_mu);
}
