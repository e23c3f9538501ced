-- 002-idempotency.sql: the idempotency guard's keys, one row per (prefix, key), with the same contract as
-- src/redis/lua/idempotency-*.lua (checked by src/bullmq/idempotency-store.case.ts).
--
-- A row whose expires_at_ms has passed is read as absent, as an expired Redis key. Every
-- idempotency_begin deletes up to 4 expired rows (of any prefix) while it adds at most one, so the table
-- stays near the number of live keys without a scheduled job.

CREATE TABLE {{schema}}.idempotency_keys (
  prefix text NOT NULL,
  key text NOT NULL,
  state text NOT NULL CHECK (state IN ('running', 'done')),
  token text,
  value text,
  expires_at_ms bigint NOT NULL,
  PRIMARY KEY (prefix, key)
);
CREATE INDEX idempotency_keys_expiry ON {{schema}}.idempotency_keys (expires_at_ms);

-- Claims p_key for p_token for p_ttl_ms, or reports what holds it:
--   { state: 'run' }                     the key was free: the caller holds it now
--   { state: 'done', value }             the work finished before: value is the stored outcome (JSON)
--   { state: 'wait', expiresInMs }       another caller runs it; its claim expires in expiresInMs
CREATE FUNCTION {{schema}}.idempotency_begin(p_prefix text, p_key text, p_token text, p_ttl_ms bigint, p_now_ms bigint)
RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  v_now bigint := {{schema}}.now_ms(p_now_ms);
  v_row {{schema}}.idempotency_keys%ROWTYPE;
BEGIN
  -- Each claim adds at most one row and removes up to 4 expired ones (an index range scan).
  DELETE FROM {{schema}}.idempotency_keys k WHERE (k.prefix, k.key) IN (
    SELECT e.prefix, e.key FROM {{schema}}.idempotency_keys e WHERE e.expires_at_ms <= v_now
    ORDER BY e.expires_at_ms LIMIT 4 FOR UPDATE SKIP LOCKED);
  INSERT INTO {{schema}}.idempotency_keys AS k (prefix, key, state, token, value, expires_at_ms)
    VALUES (p_prefix, p_key, 'running', p_token, NULL, v_now + p_ttl_ms)
    ON CONFLICT (prefix, key) DO UPDATE
      SET state = 'running', token = EXCLUDED.token, value = NULL, expires_at_ms = EXCLUDED.expires_at_ms
      WHERE k.expires_at_ms <= v_now
    RETURNING * INTO v_row;
  IF FOUND THEN
    RETURN jsonb_build_object('state', 'run');
  END IF;
  -- The key is live (the insert found it and left it locked): report it.
  SELECT * INTO v_row FROM {{schema}}.idempotency_keys k WHERE k.prefix = p_prefix AND k.key = p_key;
  IF v_row.state = 'done' THEN
    RETURN jsonb_build_object('state', 'done', 'value', v_row.value);
  END IF;
  RETURN jsonb_build_object('state', 'wait', 'expiresInMs', greatest(0, v_row.expires_at_ms - v_now));
END
$$;

-- Stores the outcome once: true when p_token held the claim, or its claim expired and nobody took the
-- key since; false when the key is done already or another caller claimed it.
CREATE FUNCTION {{schema}}.idempotency_finish(
  p_prefix text, p_key text, p_token text, p_value text, p_ttl_ms bigint, p_now_ms bigint
) RETURNS boolean
LANGUAGE sql AS $$
  WITH now AS (SELECT {{schema}}.now_ms(p_now_ms) AS ms),
  stored AS (
    INSERT INTO {{schema}}.idempotency_keys AS k (prefix, key, state, token, value, expires_at_ms)
      SELECT p_prefix, p_key, 'done', NULL, p_value, now.ms + p_ttl_ms FROM now
      ON CONFLICT (prefix, key) DO UPDATE
        SET state = 'done', token = NULL, value = EXCLUDED.value, expires_at_ms = EXCLUDED.expires_at_ms
        WHERE k.expires_at_ms <= (SELECT ms FROM now) OR (k.state = 'running' AND k.token = p_token)
      RETURNING 1
  )
  SELECT EXISTS (SELECT 1 FROM stored)
$$;

-- Drops p_token's live claim after a failure so a retry may run; false when it no longer held it.
CREATE FUNCTION {{schema}}.idempotency_release(p_prefix text, p_key text, p_token text, p_now_ms bigint) RETURNS boolean
LANGUAGE sql AS $$
  WITH released AS (
    DELETE FROM {{schema}}.idempotency_keys k
      WHERE k.prefix = p_prefix AND k.key = p_key AND k.state = 'running' AND k.token = p_token
        AND k.expires_at_ms > {{schema}}.now_ms(p_now_ms)
      RETURNING 1
  )
  SELECT EXISTS (SELECT 1 FROM released)
$$;

-- Extends p_token's live claim by p_ttl_ms from now; false when it was lost.
CREATE FUNCTION {{schema}}.idempotency_renew(p_prefix text, p_key text, p_token text, p_ttl_ms bigint, p_now_ms bigint)
RETURNS boolean
LANGUAGE sql AS $$
  WITH now AS (SELECT {{schema}}.now_ms(p_now_ms) AS ms),
  renewed AS (
    UPDATE {{schema}}.idempotency_keys k SET expires_at_ms = (SELECT ms FROM now) + p_ttl_ms
      WHERE k.prefix = p_prefix AND k.key = p_key AND k.state = 'running' AND k.token = p_token
        AND k.expires_at_ms > (SELECT ms FROM now)
      RETURNING 1
  )
  SELECT EXISTS (SELECT 1 FROM renewed)
$$;
