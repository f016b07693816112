-- The bundled example warehouse: a small product's event table, user table, company table and
-- plan lookup table, as a data team might keep them. `npx tsx examples/build-warehouse.ts`
-- turns this into examples/warehouse.sqlite (docs/warehouse.md walks through loading it).

-- Events: 1,000 rows over March 2024. event_time is NOT NULL (so full_sync may use it);
-- inserted_at is when the row landed in the warehouse (the time_based watermark column).
CREATE TABLE events (
  event_id    TEXT PRIMARY KEY,
  event_name  TEXT NOT NULL,
  event_time  TEXT NOT NULL,
  user_id     TEXT,
  device_id   TEXT,
  properties  TEXT,          -- JSON object: flattened into event properties
  country     TEXT,
  inserted_at TEXT NOT NULL
);

WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 999)
INSERT INTO events
SELECT
  printf('evt-%04d', i),
  CASE i % 5 WHEN 0 THEN 'Sign Up' WHEN 1 THEN 'Login' WHEN 2 THEN 'View Item' WHEN 3 THEN 'Add To Cart' ELSE 'Purchase' END,
  datetime('2024-03-01 00:00:00', '+' || (i * 44) || ' minutes'),
  CASE WHEN i % 10 = 9 THEN NULL ELSE printf('user-%02d', i % 40) END,   -- every 10th event is anonymous
  printf('device-%03d', i % 120),
  json_object('plan_id', CASE i % 3 WHEN 0 THEN 'free' WHEN 1 THEN 'pro' ELSE 'team' END, 'item_price', (i % 17) * 5 + 0.99),
  CASE i % 4 WHEN 0 THEN 'US' WHEN 1 THEN 'DE' WHEN 2 THEN 'FR' ELSE 'IN' END,
  datetime('2024-03-01 00:05:00', '+' || (i * 44) || ' minutes')
FROM n;

-- Users: several rows per user (history); the connector loads only the latest row per user_id.
CREATE TABLE users (
  user_id    TEXT,
  updated_at TEXT,
  name       TEXT,
  email      TEXT,
  plan_id    TEXT,
  traits     TEXT            -- JSON object
);

WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 119)
INSERT INTO users
SELECT
  printf('user-%02d', i % 40),
  datetime('2024-02-01 00:00:00', '+' || i || ' days'),
  printf('User %02d', i % 40),
  printf('user%02d@example.com', i % 40),
  CASE (i / 40) WHEN 0 THEN 'free' WHEN 1 THEN 'pro' ELSE 'team' END,  -- the latest row has the latest plan
  json_object('city', CASE i % 3 WHEN 0 THEN 'Berlin' WHEN 1 THEN 'Paris' ELSE 'Austin' END, 'version', i / 40 + 1)
FROM n;

CREATE TABLE companies (
  company_id TEXT,
  updated_at TEXT,
  name       TEXT,
  industry   TEXT,
  seats      INTEGER
);

INSERT INTO companies VALUES
  ('acme',    '2024-02-01 00:00:00', 'Acme Inc',      'Manufacturing', 120),
  ('acme',    '2024-03-01 00:00:00', 'Acme Inc',      'Manufacturing', 150),
  ('globex',  '2024-02-15 00:00:00', 'Globex',        'Energy',         80),
  ('initech', '2024-03-10 00:00:00', 'Initech',       'Software',       45);

-- A lookup table keyed by plan_id (the event property the events' JSON column carries).
CREATE TABLE plans (
  plan_id       TEXT PRIMARY KEY,
  label         TEXT,
  monthly_price REAL
);

INSERT INTO plans VALUES ('free', 'Free', 0), ('pro', 'Pro', 29), ('team', 'Team', 99);
