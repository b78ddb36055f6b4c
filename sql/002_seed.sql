-- 002_seed.sql: 1000 generated persons, the same on every machine.
--
-- Inserted only into an empty table, so re-applying never duplicates them
-- and never resurrects rows a test deleted. The table lock makes the
-- "is it empty?" check and the insert atomic when two appliers race.
BEGIN;

LOCK TABLE person IN SHARE ROW EXCLUSIVE MODE;

INSERT INTO person (name, gender, age, external_id)
SELECT 'Name' || (i % 100),
       CASE WHEN i % 2 = 0 THEN 'MALE' ELSE 'FEMALE' END,
       18 + i % 60,
       i
FROM generate_series(1, 1000) AS i
WHERE NOT EXISTS (SELECT 1 FROM person)
ORDER BY i;   -- ids 1..1000 follow i in a fresh table

COMMIT;
