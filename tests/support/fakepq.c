/* The libpq double of db/'s unit tests (see fakepq.h for what it models). */
#define WEFT_PQ_IMPL /* libpq's names, not pq.h's macros over the table */
#include "db/pq.h"

#include "fakepq.h"

#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/loop.h"
#include "harness.h"

/* The opaque types of libpq-fe.h, as the double has them. */
struct pg_result {
    ExecStatusType status;
    int ntuples;
    char cmd_status[16]; /* "SELECT 1", "BEGIN", "COMMIT", "ROLLBACK" */
    char value[64];
    char sqlstate[6];
    char message[128];
};

enum { CMD_PREPARE, CMD_EXEC, CMD_SYNC };

typedef struct cmd {
    struct cmd *next;
    int kind;
    int written;   /* flushed to the server */
    int cancelled; /* a cancel request reached the server while it ran */
    int fail;
    int hang; /* its parameter is "hang": only a cancel or a drop ends it */
    char verb[16]; /* the first word of its SQL */
    char value[64];
    char channel[64]; /* LISTEN/UNLISTEN's, unquoted */
} cmd;

typedef struct item {
    struct item *next;
    PGresult *res; /* NULL: the end of one command's results */
} item;

struct pg_conn {
    struct pg_conn *next; /* every connection not yet finished */
    int id;
    int fd[2]; /* [0] libpq's (PQsocket), [1] the server's; -1 once closed */
    ConnStatusType status;
    int pipeline;
    int established; /* counted in WT_PQ_OPEN */
    cmd *cmds;       /* sent and not answered, in order */
    char names[32][16], verbs[32][16]; /* prepared statements: name -> the first word of their SQL */
    int n_prepared;
    item *items, **items_tail; /* answered, for PQgetResult */
    char error[128];
    char channels[16][64]; /* LISTENed to */
    int n_channels;
    PGnotify *notes, **notes_tail; /* arrived, for PQnotifies */
};

struct pg_cancel {
    int conn_id;
};

struct pg_cancel_conn {
    int conn_id;
    int fd[2];
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static PGconn *conns;
static int next_id, refusing, answering_all, credit, libpq_version;
static int counts[WT_PQ_N];
static char verbs_written[1024]; /* the statements written, by their first word */

/* ---- the server side (mu held) ---- */

static PGresult *result_new(ExecStatusType status)
{
    PGresult *r = calloc(1, sizeof(*r));
    cr_assert_not_null(r);
    r->status = status;
    return r;
}

static PGresult *error_result(const char *sqlstate, const char *message)
{
    PGresult *r = result_new(PGRES_FATAL_ERROR);
    snprintf(r->sqlstate, sizeof(r->sqlstate), "%s", sqlstate);
    snprintf(r->message, sizeof(r->message), "ERROR:  %s\n", message);
    return r;
}

static void push(PGconn *c, PGresult *res)
{
    item *it = calloc(1, sizeof(*it));
    cr_assert_not_null(it);
    it->res = res;
    *c->items_tail = it;
    c->items_tail = &it->next;
}

/* A LISTEN or UNLISTEN answered: the session's channels change. */
static void listened(PGconn *c, const char *verb, const char *channel)
{
    int at = -1;
    for (int i = 0; i < c->n_channels; i++)
        if (strcmp(c->channels[i], channel) == 0)
            at = i;
    if (strcmp(verb, "LISTEN") == 0 && at < 0 && c->n_channels < 16)
        snprintf(c->channels[c->n_channels++], sizeof(c->channels[0]), "%s", channel);
    else if (strcmp(verb, "UNLISTEN") == 0 && at >= 0)
        memcpy(c->channels[at], c->channels[--c->n_channels], sizeof(c->channels[0]));
}

/* What PostgreSQL sends back for one command: results, then (outside a Sync) the end of the command. */
static void answer(PGconn *c, cmd *k)
{
    switch (k->kind) {
    case CMD_PREPARE:
        push(c, result_new(PGRES_COMMAND_OK));
        push(c, NULL);
        break;
    case CMD_SYNC:
        push(c, result_new(PGRES_PIPELINE_SYNC));
        break;
    default: {
        PGresult *r;
        if (k->cancelled)
            r = error_result("57014", "canceling statement due to user request");
        else if (k->fail)
            r = error_result("42P01", "relation \"missing\" does not exist");
        else if (strcmp(k->verb, "SELECT") == 0) {
            r = result_new(PGRES_TUPLES_OK);
            r->ntuples = 1;
            snprintf(r->cmd_status, sizeof(r->cmd_status), "SELECT 1");
            snprintf(r->value, sizeof(r->value), "%s", k->value);
        } else {
            r = result_new(PGRES_COMMAND_OK); /* BEGIN, COMMIT, ROLLBACK: their tag */
            snprintf(r->cmd_status, sizeof(r->cmd_status), "%s", k->verb);
            if (k->channel[0] != '\0')
                listened(c, k->verb, k->channel);
        }
        push(c, r);
        push(c, NULL);
        counts[WT_PQ_ANSWERED]++;
    }
    }
}

/* Answers what may be answered, in order: Parse and Sync at once, a
 * statement when the test allows it (or it was cancelled). The byte wakes
 * the loop watching libpq's end. */
static void pump(PGconn *c)
{
    int any = 0;
    while (c->cmds != NULL && c->cmds->written && c->fd[1] >= 0) {
        cmd *k = c->cmds;
        if (k->kind == CMD_EXEC && !k->cancelled) {
            if (k->hang || (!answering_all && credit == 0))
                break;
            if (!answering_all)
                credit--;
        }
        c->cmds = k->next;
        answer(c, k);
        free(k);
        any = 1;
    }
    if (any && send(c->fd[1], "r", 1, MSG_DONTWAIT | MSG_NOSIGNAL) != 1)
        cr_log_warn("fakepq: cannot wake connection %d", c->id);
}

static void pump_all(void)
{
    for (PGconn *c = conns; c != NULL; c = c->next)
        pump(c);
}

static void append(PGconn *c, cmd *k)
{
    cmd **pp = &c->cmds;
    while (*pp != NULL)
        pp = &(*pp)->next;
    *pp = k;
}

/* The first word of the SQL prepared as `name` on c (mu held). */
static const char *verb_of(const PGconn *c, const char *name)
{
    for (int i = 0; i < c->n_prepared; i++)
        if (strcmp(c->names[i], name) == 0)
            return c->verbs[i];
    return "?";
}

/* `sql` (unnamed statements), else the statement prepared as `name`. */
static int send_cmd_sql(PGconn *c, int kind, const char *name, const char *sql, const char *value)
{
    pthread_mutex_lock(&mu);
    int ok = c->status == CONNECTION_OK;
    if (ok) {
        cmd *k = calloc(1, sizeof(*k));
        cr_assert_not_null(k);
        k->kind = kind;
        if (kind == CMD_EXEC && sql != NULL) {
            snprintf(k->verb, sizeof(k->verb), "%.*s", (int)strcspn(sql, " "), sql);
            const char *q = strchr(sql, '"');
            if (q != NULL)
                snprintf(k->channel, sizeof(k->channel), "%.*s", (int)strcspn(q + 1, "\""), q + 1);
        } else if (kind == CMD_EXEC) {
            snprintf(k->verb, sizeof(k->verb), "%s", verb_of(c, name));
        }
        if (value != NULL) {
            snprintf(k->value, sizeof(k->value), "%s", value);
            k->fail = strcmp(value, "fail") == 0;
            k->hang = strcmp(value, "hang") == 0;
        }
        append(c, k);
    }
    pthread_mutex_unlock(&mu);
    return ok;
}

static int send_cmd(PGconn *c, int kind, const char *name, const char *value)
{
    return send_cmd_sql(c, kind, name, NULL, value);
}

/* The server gets a cancel for connection `id`: its running statement ends with 57014. */
static void cancel_running(int id, int on_loop)
{
    pthread_mutex_lock(&mu);
    counts[WT_PQ_CANCELS]++;
    counts[WT_PQ_CANCELS_ON_LOOP] += on_loop;
    for (PGconn *c = conns; c != NULL; c = c->next)
        if (c->id == id) {
            for (cmd *k = c->cmds; k != NULL; k = k->next)
                if (k->kind == CMD_EXEC && k->written) {
                    k->cancelled = 1;
                    break;
                }
            pump(c);
        }
    pthread_mutex_unlock(&mu);
}

static void blocking_call(void)
{
    if (weft_loop_current != NULL) {
        pthread_mutex_lock(&mu);
        counts[WT_PQ_BLOCKING_ON_LOOP]++;
        pthread_mutex_unlock(&mu);
    }
}

/* ---- connections ---- */

static PGconn *conn_new(int blocking)
{
    PGconn *c = calloc(1, sizeof(*c));
    cr_assert_not_null(c);
    c->items_tail = &c->items;
    c->notes_tail = &c->notes;
    c->fd[0] = c->fd[1] = -1;
    pthread_mutex_lock(&mu);
    counts[WT_PQ_ATTEMPTS]++;
    c->id = ++next_id;
    if (refusing) {
        c->status = CONNECTION_BAD;
        snprintf(c->error, sizeof(c->error), "connection to server failed: Connection refused\n");
    } else {
        cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, c->fd), 0);
        c->status = blocking ? CONNECTION_OK : CONNECTION_STARTED;
        if (blocking) {
            c->established = 1;
            counts[WT_PQ_CONNECTS]++;
            counts[WT_PQ_OPEN]++;
        }
        c->next = conns;
        conns = c;
    }
    pthread_mutex_unlock(&mu);
    return c;
}

/* Counts the connections asked for with an `options` keyword (a pooler refuses it). */
static void count_options(const char *const *keywords)
{
    for (int i = 0; keywords[i] != NULL; i++)
        if (strcmp(keywords[i], "options") == 0) {
            pthread_mutex_lock(&mu);
            counts[WT_PQ_OPTIONS]++;
            pthread_mutex_unlock(&mu);
        }
}

static PGconn *f_PQconnectStartParams(const char *const *keywords, const char *const *values, int expand_dbname)
{
    (void)values, (void)expand_dbname;
    count_options(keywords);
    return conn_new(0);
}

static PGconn *f_PQconnectdbParams(const char *const *keywords, const char *const *values, int expand_dbname)
{
    (void)values, (void)expand_dbname;
    blocking_call();
    count_options(keywords);
    return conn_new(1);
}

static PostgresPollingStatusType f_PQconnectPoll(PGconn *c)
{
    pthread_mutex_lock(&mu);
    PostgresPollingStatusType s = PGRES_POLLING_FAILED;
    if (c->status == CONNECTION_STARTED) {
        c->status = CONNECTION_OK;
        c->established = 1;
        counts[WT_PQ_CONNECTS]++;
        counts[WT_PQ_OPEN]++;
    }
    if (c->status == CONNECTION_OK)
        s = PGRES_POLLING_OK;
    pthread_mutex_unlock(&mu);
    return s;
}

static void f_PQclear(PGresult *r) { free(r); }

static void f_PQfinish(PGconn *c)
{
    if (c == NULL)
        return;
    pthread_mutex_lock(&mu);
    for (PGconn **pp = &conns; *pp != NULL; pp = &(*pp)->next)
        if (*pp == c) {
            *pp = c->next;
            break;
        }
    if (c->established)
        counts[WT_PQ_OPEN]--;
    pthread_mutex_unlock(&mu);
    for (int i = 0; i < 2; i++)
        if (c->fd[i] >= 0)
            close(c->fd[i]);
    while (c->cmds != NULL) {
        cmd *k = c->cmds;
        c->cmds = k->next;
        free(k);
    }
    while (c->items != NULL) {
        item *it = c->items;
        c->items = it->next;
        free(it->res);
        free(it);
    }
    while (c->notes != NULL) {
        PGnotify *n = c->notes;
        c->notes = n->next;
        free(n);
    }
    free(c);
}

static ConnStatusType f_PQstatus(const PGconn *c)
{
    pthread_mutex_lock(&mu);
    ConnStatusType s = c->status;
    pthread_mutex_unlock(&mu);
    return s;
}

static char *f_PQerrorMessage(const PGconn *c) { return (char *)c->error; }
static int f_PQsocket(const PGconn *c) { return c->fd[0]; }
static int f_PQsetnonblocking(PGconn *c, int arg) { return (void)c, (void)arg, 0; }
static PGTransactionStatusType f_PQtransactionStatus(const PGconn *c) { return (void)c, PQTRANS_IDLE; }
static int f_PQlibVersion(void) { return libpq_version; }

static int f_PQenterPipelineMode(PGconn *c)
{
    c->pipeline = 1;
    return 1;
}

/* ---- sending ---- */

static int f_PQsendPrepare(PGconn *c, const char *name, const char *query, int n, const Oid *types)
{
    (void)n, (void)types;
    pthread_mutex_lock(&mu);
    counts[WT_PQ_PREPARED]++;
    if (c->n_prepared < 32) {
        snprintf(c->names[c->n_prepared], sizeof(c->names[0]), "%s", name);
        snprintf(c->verbs[c->n_prepared], sizeof(c->verbs[0]), "%.*s", (int)strcspn(query, " "), query);
        c->n_prepared++;
    }
    pthread_mutex_unlock(&mu);
    return send_cmd(c, CMD_PREPARE, name, NULL);
}

static int f_PQsendQueryPrepared(PGconn *c, const char *name, int n, const char *const *values, const int *lengths,
                                 const int *formats, int result_format)
{
    (void)lengths, (void)formats, (void)result_format;
    return send_cmd(c, CMD_EXEC, name, n > 0 && values[0] != NULL ? values[0] : "");
}

/* An unnamed statement: its Parse goes with it, every time. */
static int f_PQsendQueryParams(PGconn *c, const char *command, int n, const Oid *types, const char *const *values,
                               const int *lengths, const int *formats, int result_format)
{
    (void)types, (void)lengths, (void)formats, (void)result_format;
    pthread_mutex_lock(&mu);
    counts[WT_PQ_UNNAMED]++;
    pthread_mutex_unlock(&mu);
    return send_cmd_sql(c, CMD_EXEC, "", command, n > 0 && values[0] != NULL ? values[0] : "");
}

static char *f_PQescapeIdentifier(PGconn *c, const char *str, size_t len)
{
    (void)c;
    char *q = malloc(len + 3);
    if (q != NULL)
        snprintf(q, len + 3, "\"%.*s\"", (int)len, str);
    return q;
}

static void f_PQfreemem(void *p) { free(p); }

static PGnotify *f_PQnotifies(PGconn *c)
{
    pthread_mutex_lock(&mu);
    PGnotify *n = c->notes;
    if (n != NULL) {
        c->notes = n->next;
        if (c->notes == NULL)
            c->notes_tail = &c->notes;
        n->next = NULL;
    }
    pthread_mutex_unlock(&mu);
    return n;
}

/* Everything buffered goes to the server, in one write. */
static int f_PQflush(PGconn *c)
{
    pthread_mutex_lock(&mu);
    int statements = 0, any = 0;
    for (cmd *k = c->cmds; k != NULL; k = k->next)
        if (!k->written) {
            k->written = any = 1;
            if (k->kind == CMD_EXEC) {
                statements++;
                size_t at = strlen(verbs_written);
                snprintf(verbs_written + at, sizeof(verbs_written) - at, "%s%s", at > 0 ? " " : "", k->verb);
            }
        }
    if (statements > 0) {
        counts[WT_PQ_WRITES]++;
        counts[WT_PQ_WRITTEN] += statements;
    }
    if (any)
        pump(c);
    int rc = c->status == CONNECTION_OK ? 0 : -1;
    pthread_mutex_unlock(&mu);
    return rc;
}

static int f_PQsendPipelineSync(PGconn *c) { return send_cmd(c, CMD_SYNC, NULL, NULL); }

/* libpq 15's: the Sync is sent at once. */
static int f_PQpipelineSync(PGconn *c) { return send_cmd(c, CMD_SYNC, NULL, NULL) && f_PQflush(c) == 0; }

/* ---- receiving ---- */

/* Reads the wake-up bytes; the peer's close is the connection's end. */
static int f_PQconsumeInput(PGconn *c)
{
    char buf[256];
    ssize_t n;
    while ((n = recv(c->fd[0], buf, sizeof(buf), MSG_DONTWAIT)) > 0)
        ;
    if (n == 0) {
        pthread_mutex_lock(&mu);
        c->status = CONNECTION_BAD;
        snprintf(c->error, sizeof(c->error), "server closed the connection unexpectedly\n");
        pthread_mutex_unlock(&mu);
        return 0;
    }
    return 1;
}

static int f_PQisBusy(PGconn *c)
{
    pthread_mutex_lock(&mu);
    int busy = c->items == NULL;
    pthread_mutex_unlock(&mu);
    return busy;
}

static PGresult *f_PQgetResult(PGconn *c)
{
    pthread_mutex_lock(&mu);
    item *it = c->items;
    PGresult *r = NULL;
    if (it != NULL) {
        c->items = it->next;
        if (c->items == NULL)
            c->items_tail = &c->items;
        r = it->res;
        free(it);
    }
    pthread_mutex_unlock(&mu);
    return r;
}

/* ---- results ---- */

static ExecStatusType f_PQresultStatus(const PGresult *r) { return r->status; }
static int f_PQntuples(const PGresult *r) { return r->ntuples; }
static int f_PQnfields(const PGresult *r) { return r->ntuples > 0; }
static char *f_PQfname(const PGresult *r, int col) { return (void)r, col == 0 ? "value" : NULL; }
static char *f_PQgetvalue(const PGresult *r, int row, int col) { return (void)row, (void)col, (char *)r->value; }
static int f_PQgetisnull(const PGresult *r, int row, int col) { return (void)r, (void)row, (void)col, 0; }
static char *f_PQcmdStatus(PGresult *r) { return r->cmd_status; }
static char *f_PQcmdTuples(PGresult *r) { return r->status == PGRES_TUPLES_OK ? "1" : ""; }

static char *f_PQresultErrorField(const PGresult *r, int field)
{
    return field == PG_DIAG_SQLSTATE && r->sqlstate[0] != '\0' ? (char *)r->sqlstate : NULL;
}

static char *f_PQresultErrorMessage(const PGresult *r) { return (char *)r->message; }

/* ---- cancelling: libpq 15's blocking PQcancel ---- */

static PGcancel *f_PQgetCancel(PGconn *c)
{
    PGcancel *k = calloc(1, sizeof(*k));
    if (k != NULL)
        k->conn_id = c->id;
    return k;
}

static int f_PQcancel(PGcancel *k, char *errbuf, int size)
{
    (void)errbuf, (void)size;
    blocking_call();
    cancel_running(k->conn_id, 0);
    return 1;
}

static void f_PQfreeCancel(PGcancel *k) { free(k); }

/* ---- cancelling: libpq 17's on the loop ---- */

static PGcancelConn *f_PQcancelCreate(PGconn *c)
{
    PGcancelConn *k = calloc(1, sizeof(*k));
    if (k == NULL)
        return NULL;
    k->conn_id = c->id;
    cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, k->fd), 0);
    return k;
}

static int f_PQcancelStart(PGcancelConn *k) { return (void)k, 1; }
static ConnStatusType f_PQcancelStatus(const PGcancelConn *k) { return (void)k, CONNECTION_STARTED; }
static int f_PQcancelSocket(const PGcancelConn *k) { return k->fd[0]; }
static char *f_PQcancelErrorMessage(const PGcancelConn *k) { return (void)k, ""; }

/* The socket was writable: the cancel key goes out and the server takes it. */
static PostgresPollingStatusType f_PQcancelPoll(PGcancelConn *k)
{
    cancel_running(k->conn_id, weft_loop_current != NULL);
    return PGRES_POLLING_OK;
}

static void f_PQcancelFinish(PGcancelConn *k)
{
    close(k->fd[0]);
    close(k->fd[1]);
    free(k);
}

/* ---- the test's side ---- */

void wt_pq_install(int libpq17)
{
    weft_pq_api api = {
#define WT_PQ_FAKE(f) .f = f_##f,
        WEFT_PQ_FUNCTIONS(WT_PQ_FAKE)
#undef WT_PQ_FAKE
    };
    if (libpq17) {
#define WT_PQ_FAKE(f) api.f = f_##f;
        WEFT_PQ_OPTIONAL(WT_PQ_FAKE)
#undef WT_PQ_FAKE
    }
    pthread_mutex_lock(&mu);
    libpq_version = libpq17 ? 170000 : 150000;
    refusing = answering_all = credit = 0;
    memset(counts, 0, sizeof(counts));
    verbs_written[0] = '\0';
    pthread_mutex_unlock(&mu);
    weft_pq_install(&api);
}

void wt_pq_refuse(int refuse)
{
    pthread_mutex_lock(&mu);
    refusing = refuse;
    pthread_mutex_unlock(&mu);
}

void wt_pq_auto(int on)
{
    pthread_mutex_lock(&mu);
    answering_all = on;
    pump_all();
    pthread_mutex_unlock(&mu);
}

void wt_pq_answer(int n)
{
    pthread_mutex_lock(&mu);
    credit += n;
    pump_all();
    pthread_mutex_unlock(&mu);
}

void wt_pq_drop(void)
{
    pthread_mutex_lock(&mu);
    for (PGconn *c = conns; c != NULL; c = c->next)
        if (c->fd[1] >= 0) {
            shutdown(c->fd[1], SHUT_RDWR);
            close(c->fd[1]);
            c->fd[1] = -1;
        }
    pthread_mutex_unlock(&mu);
}

int wt_pq_count(int which)
{
    pthread_mutex_lock(&mu);
    int n = counts[which];
    pthread_mutex_unlock(&mu);
    return n;
}

void wt_pq_wait_count(int which, int n, double limit_ms)
{
    double deadline = wt_now_ms() + limit_ms;
    while (wt_pq_count(which) < n && wt_now_ms() < deadline)
        usleep(1000);
    cr_assert_geq(wt_pq_count(which), n, "fakepq counter %d: %d, not %d, within %.0f ms", which, wt_pq_count(which),
                  n, limit_ms);
}

int wt_pq_notify(const char *channel, const char *payload)
{
    int n = 0;
    pthread_mutex_lock(&mu);
    for (PGconn *c = conns; c != NULL; c = c->next) {
        int listening = 0;
        for (int i = 0; i < c->n_channels; i++)
            listening |= strcmp(c->channels[i], channel) == 0;
        if (!listening || c->fd[1] < 0)
            continue;
        size_t lc = strlen(channel) + 1, lp = strlen(payload) + 1;
        PGnotify *note = calloc(1, sizeof(*note) + lc + lp);
        cr_assert_not_null(note);
        note->relname = memcpy((char *)(note + 1), channel, lc);
        note->extra = memcpy(note->relname + lc, payload, lp);
        *c->notes_tail = note;
        c->notes_tail = &note->next;
        if (send(c->fd[1], "n", 1, MSG_DONTWAIT | MSG_NOSIGNAL) != 1)
            cr_log_warn("fakepq: cannot wake connection %d", c->id);
        n++;
    }
    pthread_mutex_unlock(&mu);
    return n;
}

int wt_pq_listening(const char *channel)
{
    int n = 0;
    pthread_mutex_lock(&mu);
    for (PGconn *c = conns; c != NULL; c = c->next)
        for (int i = 0; i < c->n_channels; i++)
            n += strcmp(c->channels[i], channel) == 0;
    pthread_mutex_unlock(&mu);
    return n;
}

const char *wt_pq_written_sql(void)
{
    static char copy[sizeof(verbs_written)];
    pthread_mutex_lock(&mu);
    memcpy(copy, verbs_written, sizeof(copy));
    pthread_mutex_unlock(&mu);
    return copy;
}
