-- 001_schema.sql: the person table of the persons plugin.
--
-- Idempotent: applied on every `packaging/pgdev.sh start`, so every statement
-- must be a no-op when its object already exists. One transaction, so a
-- failure never leaves half a schema behind.
BEGIN;

CREATE TABLE IF NOT EXISTS person (
    id          serial PRIMARY KEY,
    name        varchar(255),
    gender      varchar(255),
    age         int,
    external_id int            -- key of the generated seed rows; not exposed by the API
);

-- GET /persons/name/{name}: equality on name.
CREATE INDEX IF NOT EXISTS person_name_idx ON person (name);
-- GET /persons/age-greater-than/{age}: range on age.
CREATE INDEX IF NOT EXISTS person_age_idx ON person (age);

COMMIT;
