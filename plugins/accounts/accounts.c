/*
 * accounts: money transfers in one database transaction (plugin API 1.1).
 *
 *   GET  /{policy}/accounts/{id}       -> {"id": 7, "balance": 1000}
 *   POST /{policy}/accounts/transfer   {"from": 1, "to": 2, "amount": 10}
 *        200 {"from": {"id","balance"}, "to": {"id","balance"}}
 *        409 the source account would go negative (nothing changes)
 *        404 an unknown account, 400 bad input, 503 database unavailable,
 *        415 a body that is not Content-Type: application/json, 413 a body
 *        over 4 KiB
 *
 * A transfer is BEGIN; lock both rows in id order (SELECT ... ORDER BY id
 * FOR UPDATE: the row locks are taken in the sorted order, so two opposite
 * transfers between the same accounts queue instead of deadlocking); check
 * the balance; UPDATE both; COMMIT. The blocking entry point (pool,
 * coroutine) writes it as straight-line code; the reactive one as a chain of
 * callbacks over the same steps. Schema: sql/003_accounts.sql.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>
#include <weft/plugin.h>

#define SQL_GET "SELECT json_build_object('id', id, 'balance', balance)::text FROM account WHERE id = $1::int"
#define SQL_LOCK "SELECT id, balance FROM account WHERE id IN ($1::int, $2::int) ORDER BY id FOR UPDATE"
#define SQL_MOVE                                                                                                   \
    "UPDATE account SET balance = balance + CASE WHEN id = $1::int THEN -$3::bigint ELSE $3::bigint END "         \
    "WHERE id IN ($1::int, $2::int) RETURNING id, balance"

enum { OP_GET, OP_TRANSFER };

/* A transfer is one flat object of three integers: a few dozen bytes. */
#define BODY_MAX 4096
#define JSON_DEPTH_MAX 4

static int send_json(weft_req *req, int status, const char *text)
{
    const weft_host *h = weft_req_host(req);
    h->response->status(req, status);
    if (h->response->header(req, "content-type", "application/json") != WEFT_OK ||
        h->response->write(req, text, strlen(text)) != WEFT_OK)
        return WEFT_ERROR;
    return WEFT_OK;
}

static int send_error(weft_req *req, int status, const char *fmt, ...) WEFT_PRINTF(3, 4);
static int send_error(weft_req *req, int status, const char *fmt, ...)
{
    const weft_host *h = weft_req_host(req);
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    json_t *obj = json_pack("{s:s}", "error", msg);
    char *text = obj != NULL ? json_dumps(obj, JSON_COMPACT) : NULL;
    json_decref(obj);
    if (text == NULL)
        return WEFT_ERROR;
    if (status == 503)
        h->response->header(req, "retry-after", "1");
    int rc = send_json(req, status, text);
    free(text);
    return rc;
}

/* Answers a failed host call: 503 when the database cannot take the work. */
static int send_db_error(weft_req *req, int rc, const char *what)
{
    const weft_host *h = weft_req_host(req);
    if (rc == WEFT_UNAVAILABLE || rc == WEFT_TIMEOUT || rc == WEFT_CANCELLED)
        return send_error(req, 503, "database unavailable");
    h->log->msg(req, WEFT_LOG_ERROR, "%s failed (%d)", what, rc);
    return send_error(req, 500, "database error");
}

/* ---- input ---- */

typedef struct transfer {
    long long from, to, amount;
    char p[3][24]; /* the three as statement parameters */
    weft_req *req;
    int step;
} transfer;

static int parse_id(const char *s, long long *out)
{
    if (s == NULL || *s == '\0' || strlen(s) > 10)
        return -1;
    long long v = 0;
    for (const char *c = s; *c; c++) {
        if (*c < '0' || *c > '9')
            return -1;
        v = v * 10 + (*c - '0');
    }
    if (v < 1 || v > 2147483647)
        return -1;
    *out = v;
    return 0;
}

static int json_field(weft_req *req, json_t *obj, const char *name, long long max, long long *out)
{
    json_t *v = json_object_get(obj, name);
    if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > max) {
        send_error(req, 400, "%s must be an integer between 1 and %lld", name, max);
        return -1;
    }
    *out = json_integer_value(v);
    return 0;
}

/* Fills `t` from the body; answers 4xx itself and returns -1 on bad input. */
static int parse_transfer(weft_req *req, transfer *t)
{
    const weft_host *h = weft_req_host(req);
    /* application/json only (a browser on another site cannot post a
     * transfer as a preflight-free text/plain request), and a transfer is
     * flat: deeper bodies never reach jansson. Else the host answered. */
    size_t len = 0;
    const char *body = NULL;
    if (h->request->json_body(req, JSON_DEPTH_MAX, &body, &len) != WEFT_OK)
        return -1;
    if (len > BODY_MAX) {
        send_error(req, 413, "a transfer body is at most %d bytes", BODY_MAX);
        return -1;
    }
    json_error_t err;
    json_t *obj = json_loadb(body, len, JSON_REJECT_DUPLICATES, &err);
    if (!json_is_object(obj)) {
        json_decref(obj);
        send_error(req, 400, "the body must be a JSON object {\"from\", \"to\", \"amount\"}");
        return -1;
    }
    int bad = json_object_size(obj) != 3;
    if (bad)
        send_error(req, 400, "the body must have exactly the fields from, to and amount");
    bad = bad || json_field(req, obj, "from", 2147483647, &t->from) != 0 ||
          json_field(req, obj, "to", 2147483647, &t->to) != 0 ||
          json_field(req, obj, "amount", 1000000000000LL, &t->amount) != 0;
    json_decref(obj);
    if (bad)
        return -1;
    if (t->from == t->to) {
        send_error(req, 400, "from and to must be different accounts");
        return -1;
    }
    snprintf(t->p[0], sizeof t->p[0], "%lld", t->from);
    snprintf(t->p[1], sizeof t->p[1], "%lld", t->to);
    snprintf(t->p[2], sizeof t->p[2], "%lld", t->amount);
    return 0;
}

/* ---- the steps, shared by both entry points ---- */

/* After the lock: 0 to go on, or the status to answer after rolling back. */
static int check_locked(const weft_host_db *db, const transfer *t, const weft_result *res)
{
    if (db->result_rows(res) != 2)
        return 404;
    for (int i = 0; i < 2; i++)
        if (atoll(db->result_value(res, i, 0)) == t->from && atoll(db->result_value(res, i, 1)) < t->amount)
            return 409;
    return 0;
}

static int answer_moved(weft_req *req, const transfer *t, const weft_result *res)
{
    const weft_host *h = weft_req_host(req);
    long long bal_from = -1, bal_to = -1;
    for (int i = 0; i < h->db->result_rows(res); i++) {
        long long id = atoll(h->db->result_value(res, i, 0)), bal = atoll(h->db->result_value(res, i, 1));
        if (id == t->from)
            bal_from = bal;
        else if (id == t->to)
            bal_to = bal;
    }
    char text[160];
    snprintf(text, sizeof text, "{\"from\":{\"id\":%lld,\"balance\":%lld},\"to\":{\"id\":%lld,\"balance\":%lld}}",
             t->from, bal_from, t->to, bal_to);
    return send_json(req, 200, text);
}

static int refuse(weft_req *req, const transfer *t, int status)
{
    if (status == 404)
        return send_error(req, 404, "account %lld or %lld not found", t->from, t->to);
    return send_error(req, 409, "account %lld has less than %lld", t->from, t->amount);
}

static int answer_get(weft_req *req, int rc, weft_result *res)
{
    const weft_host *h = weft_req_host(req);
    int out;
    if (rc != WEFT_OK)
        out = send_db_error(req, rc, "reading an account");
    else if (h->db->result_rows(res) == 0)
        out = send_error(req, 404, "account %s not found", h->request->param(req, "id", NULL));
    else
        out = send_json(req, 200, h->db->result_value(res, 0, 0));
    h->db->result_free(res);
    return out;
}

/* ---- blocking style: pool and coroutine ---- */

static int transfer_blocking(weft_req *req)
{
    const weft_host *h = weft_req_host(req);
    transfer t = {0};
    if (parse_transfer(req, &t) != 0)
        return WEFT_OK;
    int rc = h->tx->begin(req, WEFT_READ_COMMITTED, NULL, NULL);
    if (rc != WEFT_OK)
        return send_db_error(req, rc, "BEGIN");
    const char *lock_params[] = {t.p[0], t.p[1]};
    weft_result *res = NULL;
    rc = h->db->query(req, SQL_LOCK, 2, lock_params, &res, NULL, NULL);
    int refusal = rc == WEFT_OK ? check_locked(h->db, &t, res) : 0;
    h->db->result_free(res);
    if (rc != WEFT_OK || refusal != 0) {
        h->tx->rollback(req, NULL, NULL);
        return rc != WEFT_OK ? send_db_error(req, rc, "locking the accounts") : refuse(req, &t, refusal);
    }
    const char *move_params[] = {t.p[0], t.p[1], t.p[2]};
    rc = h->db->query(req, SQL_MOVE, 3, move_params, &res, NULL, NULL);
    if (rc != WEFT_OK) {
        h->db->result_free(res);
        h->tx->rollback(req, NULL, NULL);
        return send_db_error(req, rc, "moving the amount");
    }
    rc = h->tx->commit(req, NULL, NULL);
    int out = rc == WEFT_OK ? answer_moved(req, &t, res) : send_db_error(req, rc, "COMMIT");
    h->db->result_free(res);
    return out;
}

static weft_rc acc_handle(weft_req *req, void *state)
{
    const weft_host *h = weft_req_host(req);
    if (*(int *)state == OP_TRANSFER)
        return transfer_blocking(req);
    long long id;
    if (parse_id(h->request->param(req, "id", NULL), &id) != 0)
        return send_error(req, 400, "id must be an integer between 1 and 2147483647");
    const char *params[] = {h->request->param(req, "id", NULL)};
    weft_result *res = NULL;
    int rc = h->db->query(req, SQL_GET, 1, params, &res, NULL, NULL);
    return answer_get(req, rc, res);
}

/* ---- reactive: the same steps as callbacks ---- */

typedef struct async_transfer {
    transfer t;
    weft_result *moved;
    int refusal, rc;
} async_transfer;

static void finish_async(weft_req *req, async_transfer *a, int rc)
{
    const weft_host *h = weft_req_host(req);
    h->db->result_free(a->moved);
    free(a);
    h->response->done(req, rc);
}

static void on_rolled_back(weft_req *req, void *arg, int rc)
{
    (void)rc;
    async_transfer *a = arg;
    int out = a->refusal != 0 ? refuse(req, &a->t, a->refusal) : send_db_error(req, a->rc, "the transfer");
    finish_async(req, a, out);
}

static void fail_async(weft_req *req, async_transfer *a, int refusal, int rc)
{
    const weft_host *h = weft_req_host(req);
    a->refusal = refusal;
    a->rc = rc;
    h->tx->rollback(req, on_rolled_back, a);
}

static void on_committed(weft_req *req, void *arg, int rc)
{
    async_transfer *a = arg;
    int out = rc == WEFT_OK ? answer_moved(req, &a->t, a->moved) : send_db_error(req, rc, "COMMIT");
    finish_async(req, a, out);
}

static void on_moved(weft_req *req, void *arg, int rc, weft_result *res)
{
    const weft_host *h = weft_req_host(req);
    async_transfer *a = arg;
    a->moved = res;
    if (rc != WEFT_OK) {
        fail_async(req, a, 0, rc);
        return;
    }
    h->tx->commit(req, on_committed, a);
}

static void on_locked(weft_req *req, void *arg, int rc, weft_result *res)
{
    const weft_host *h = weft_req_host(req);
    async_transfer *a = arg;
    int refusal = rc == WEFT_OK ? check_locked(h->db, &a->t, res) : 0;
    h->db->result_free(res);
    if (rc != WEFT_OK || refusal != 0) {
        fail_async(req, a, refusal, rc);
        return;
    }
    const char *params[] = {a->t.p[0], a->t.p[1], a->t.p[2]};
    h->db->query(req, SQL_MOVE, 3, params, NULL, on_moved, a);
}

static void on_begun(weft_req *req, void *arg, int rc)
{
    const weft_host *h = weft_req_host(req);
    async_transfer *a = arg;
    if (rc != WEFT_OK) {
        finish_async(req, a, send_db_error(req, rc, "BEGIN"));
        return;
    }
    const char *params[] = {a->t.p[0], a->t.p[1]};
    h->db->query(req, SQL_LOCK, 2, params, NULL, on_locked, a);
}

static void on_get(weft_req *req, void *arg, int rc, weft_result *res)
{
    const weft_host *h = weft_req_host(req);
    (void)arg;
    h->response->done(req, answer_get(req, rc, res));
}

static weft_rc acc_handle_async(weft_req *req, void *state)
{
    const weft_host *h = weft_req_host(req);
    if (*(int *)state == OP_GET) {
        long long id;
        if (parse_id(h->request->param(req, "id", NULL), &id) != 0)
            return send_error(req, 400, "id must be an integer between 1 and 2147483647");
        const char *params[] = {h->request->param(req, "id", NULL)};
        h->db->query(req, SQL_GET, 1, params, NULL, on_get, NULL);
        return WEFT_AGAIN;
    }
    async_transfer *a = calloc(1, sizeof *a);
    if (a == NULL)
        return send_error(req, 503, "out of memory");
    if (parse_transfer(req, &a->t) != 0) {
        free(a);
        return WEFT_OK;
    }
    h->tx->begin(req, WEFT_READ_COMMITTED, on_begun, a);
    return WEFT_AGAIN;
}

/* ---- lifecycle ---- */

static const int ops[] = {OP_GET, OP_TRANSFER};

static weft_rc acc_init(const weft_host *h, weft_init *ctx, void **state)
{
    if (h->db == NULL || h->tx == NULL) {
        h->init->error(ctx, "this weft has no transactions (the db and tx groups)");
        return WEFT_ERROR;
    }
    if (!WEFT_GROUP_AT_LEAST(h->request, 3)) {
        h->init->error(ctx, "this weft has no request->json_body (request group version 3)");
        return WEFT_ERROR;
    }
    /* The route tells the operation: ".../transfer" or ".../{id}". */
    const char *route = h->init->route(ctx);
    size_t n = strlen(route);
    *state = (void *)(n >= 9 && strcmp(route + n - 9, "/transfer") == 0 ? &ops[OP_TRANSFER] : &ops[OP_GET]);
    return WEFT_OK;
}

static void acc_fini(void *state) { (void)state; }

static const weft_plugin accounts_plugin = {
    WEFT_PLUGIN_HEADER,
    .name = "accounts",
    .version = "1.0.0",
    .description = "money transfers between accounts in one transaction",
    .init = acc_init,
    .fini = acc_fini,
    .handle = acc_handle,
    .handle_async = acc_handle_async,
};

const weft_plugin *weft_plugin_entry(void) { return &accounts_plugin; }
