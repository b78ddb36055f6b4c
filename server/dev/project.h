/*
 * `weft dev`'s plugin projects: the directories NAME holding NAME.c (and
 * usually route.conf) under the dev root, and their builds. The table only
 * grows; one mutex guards it, because the builder thread writes it while
 * loop threads read it for the build-error page and the Dev UI.
 */
#ifndef WEFT_DEV_PROJECT_H
#define WEFT_DEV_PROJECT_H

#include <limits.h>
#include <stddef.h>
#include <time.h>

#define WEFT_DEV_MAX_PROJECTS 64

/** Where dev mode lives: every path is absolute (root is realpath()ed). */
typedef struct weft_dev_dirs {
    char root[PATH_MAX];    /* the projects' parent directory */
    char state[PATH_MAX];   /* root/.weft-dev */
    char plugins[PATH_MAX]; /* state/plugins: the dev config's plugin directory */
    char build[PATH_MAX];   /* state/build: compiler output before its rename into plugins */
    char conf[PATH_MAX];    /* state/weft.conf: the generated config */
} weft_dev_dirs;

typedef struct weft_dev_project {
    char name[72];
    char dir[PATH_MAX];
    char routes_text[8192]; /* its route fragment, installed as NAME.routes next to NAME.so */
    char **paths;           /* route paths, for the build-error page */
    size_t n_paths;
    int built;              /* a good build is installed */
    int failed;             /* the last build failed, or (crashed) its code crashed the server */
    int crashed;
    char *output;           /* compiler output of the last build */
    time_t built_at;
    unsigned builds;
    int test_state;         /* WEFT_DEV_TESTS_* */
    char test_summary[96];  /* "2 passed, 0 failed of 2" */
    char *test_output;      /* the failures of the last run (Criterion's lines) */
    time_t tests_at;
    unsigned test_runs;
} weft_dev_project;

enum { WEFT_DEV_TESTS_NONE, WEFT_DEV_TESTS_QUEUED, WEFT_DEV_TESTS_RUNNING, WEFT_DEV_TESTS_PASSED, WEFT_DEV_TESTS_FAILED };

/**
 * snprintf that fails clearly: returns 0, or -1 after logging "dev: <what>
 * too long" when the result does not fit in `size`.
 */
int weft_dev_format(char *out, size_t size, const char *what, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

void weft_dev_lock(void);
void weft_dev_unlock(void);
/** Under weft_dev_lock: the number of projects and project i (stable: never moves). */
int weft_dev_n_projects(void);
weft_dev_project *weft_dev_project_at(int i);

/** Adds the projects under d->root not known yet; returns the index of the first new one (n before the scan). */
int weft_dev_scan(const weft_dev_dirs *d);
/** Re-reads p's NAME.routes (older projects: route.conf; neither: one coroutine route /NAME). */
void weft_dev_load_routes(weft_dev_project *p);
/**
 * Compiles p with the SDK's flags; a good build goes into d->plugins by
 * rename with its NAME.routes beside it (the server's watcher then reloads
 * it). Returns 0 for a good build.
 */
int weft_dev_build(weft_dev_project *p, const weft_dev_dirs *d);
/**
 * Shows `text` (the crash line and backtrace; taken over) on project
 * `name`'s routes instead of serving them, until its next good build.
 */
void weft_dev_mark_crashed(const char *name, char *text);
/** Frees the table (at exit, with no other thread left using it). */
void weft_dev_projects_free(void);

#endif
