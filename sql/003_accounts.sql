-- 003_accounts.sql: the account table of the accounts plugin (transactions),
-- and its seed: 100 accounts with a balance of 1000 each (total 100,000),
-- inserted only into an empty table. Idempotent, one transaction.
BEGIN;

CREATE TABLE IF NOT EXISTS account (
    id      int PRIMARY KEY,
    balance bigint NOT NULL CHECK (balance >= 0)
);

LOCK TABLE account IN SHARE ROW EXCLUSIVE MODE;

INSERT INTO account (id, balance)
SELECT i, 1000
FROM generate_series(1, 100) AS i
WHERE NOT EXISTS (SELECT 1 FROM account);

COMMIT;
