/* The database group: where PostgreSQL is, how many connections, and what stands in between. */
#include <stdlib.h>

#include "config/schema.h"

static const char *const pooler_names[] = {"none", "session", "transaction"};

/* packaging/run.sh and container setups point libpq at the server through
 * the environment alone: that is a configured database too. */
static int pg_environment(void)
{
    static const char *const pg_env[] = {"PGHOST", "PGHOSTADDR", "PGPORT", "PGDATABASE", "PGSERVICE", NULL};
    for (const char *const *e = pg_env; *e != NULL; e++)
        if (getenv(*e) != NULL && getenv(*e)[0] != '\0')
            return 1;
    return 0;
}

static void load_pooler(vctx *v, const config_setting_t *g, weft_db_cfg *db)
{
    db->pooler = weft_cfg_choice(v, g, "database", "pooler", pooler_names, 3, WEFT_POOLER_NONE);
    /* A transaction pooler hands each transaction to any server connection:
     * a statement prepared on one is missing on the next, unless the pooler
     * itself tracks them (PgBouncer >= 1.21 with max_prepared_statements). */
    db->unnamed = db->pooler == WEFT_POOLER_TRANSACTION;
    config_setting_t *prep = weft_cfg_member(v, g, "database", "prepared", CONFIG_TYPE_BOOL);
    if (prep != NULL)
        db->unnamed = !config_setting_get_bool(prep);
    const char *lc = weft_cfg_string(v, g, "database", "listen_conninfo", NULL);
    if (lc != NULL)
        db->listen_conninfo = weft_cfg_strdup(lc);
}

void weft_cfg_load_database(vctx *v, weft_config *cfg, const config_setting_t *root)
{
    static const char *const keys[] = {"conninfo",   "pool_connections", "loop_connections", "statement_timeout_ms",
                                       "connect_timeout_s", "tx_connections", "tx_wait_ms", "password_file",
                                       "pooler",     "prepared",         "listen_conninfo",  NULL};
    weft_db_cfg *db = &cfg->database;
    const char *conninfo = "dbname=weft";
    db->pool_connections = 0; /* pool workers share the loops' pipelined connections (docs/DATABASE.md) */
    db->loop_connections = 1;
    db->statement_timeout_ms = 5000;
    db->connect_timeout_s = 5;
    db->tx_connections = 4;
    db->tx_wait_ms = 1000;
    db->pooler = WEFT_POOLER_NONE;
    db->unnamed = 0;
    config_setting_t *g = weft_cfg_member(v, root, "", "database", CONFIG_TYPE_GROUP);
    if (g != NULL) {
        weft_cfg_check_keys(v, g, "database", keys);
        db->configured = 1;
        conninfo = weft_cfg_string(v, g, "database", "conninfo", conninfo);
        db->pool_connections = (int)weft_cfg_int(v, g, "database", "pool_connections", 0, 1000, 0);
        db->loop_connections = (int)weft_cfg_int(v, g, "database", "loop_connections", 1, 64, 1);
        db->statement_timeout_ms = (int)weft_cfg_int(v, g, "database", "statement_timeout_ms", 1, 3600000, 5000);
        db->connect_timeout_s = (int)weft_cfg_int(v, g, "database", "connect_timeout_s", 1, 600, 5);
        db->tx_connections = (int)weft_cfg_int(v, g, "database", "tx_connections", 1, 1000, 4);
        db->tx_wait_ms = (int)weft_cfg_int(v, g, "database", "tx_wait_ms", 0, 600000, 1000);
        load_pooler(v, g, db);
        /* The password outside the conninfo: a credential file, never the config text. */
        const char *pf = weft_cfg_string(v, g, "database", "password_file", NULL);
        if (pf != NULL)
            db->password = weft_cfg_secret_read(v, config_setting_get_member(g, "password_file"),
                                                "database.password_file", cfg->path, pf, NULL);
    }
    db->conninfo = weft_cfg_strdup(conninfo);
    db->configured = db->configured || pg_environment();
}

void weft_cfg_free_database(weft_config *cfg)
{
    free(cfg->database.conninfo);
    free(cfg->database.listen_conninfo);
    free(cfg->database.password);
}
