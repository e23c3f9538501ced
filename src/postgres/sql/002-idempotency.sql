-- 002-idempotency.sql: the idempotency guard's keys, one row each, with the same contract as
-- src/redis/lua/idempotency-*.lua (checked by src/bullmq/idempotency-store.case.ts).
--
-- A row whose expires_at_ms has passed is read as absent, as an expired Redis key. Expired rows are
-- removed a few at a time by idempotency_begin (1 call in 64 deletes up to 256 of them), so the table
-- stays near the number of live keys without a scheduled job.

CREATE TABLE {{schema}}.idempotency_keys (
  key text PRIMARY KEY,
  state text NOT NULL CHECK (state IN ('running', 'done')),
  token text,
  value text,
  expires_at_ms bigint NOT NULL
);
CREATE INDEX idempotency_keys_expiry ON {{schema}}.idempotency_keys (expires_at_ms);

-- Claims p_key for p_token for p_ttl_ms, or reports what holds it:
--   { state: 'run' }                     the key was free: the caller holds it now
--   { state: 'done', value }             the work finished before: value is the stored outcome (JSON)
--   { state: 'wait', expiresInMs }       another caller runs it; its claim expires in expiresInMs
CREATE FUNCTION {{schema}}.idempotency_begin(p_key text, p_token text, p_ttl_ms bigint, p_now_ms bigint)
RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  v_now bigint := {{schema}}.now_ms(p_now_ms);
  v_row {{schema}}.idempotency_keys%ROWTYPE;
BEGIN
  IF random() < 1.0 / 64 THEN
    DELETE FROM {{schema}}.idempotency_keys k WHERE k.key IN (
      SELECT e.key FROM {{schema}}.idempotency_keys e WHERE e.expires_at_ms <= v_now
      LIMIT 256 FOR UPDATE SKIP LOCKED);
  END IF;
  INSERT INTO {{schema}}.idempotency_keys AS k (key, state, token, value, expires_at_ms)
    VALUES (p_key, 'running', p_token, NULL, v_now + p_ttl_ms)
    ON CONFLICT (key) DO UPDATE
      SET state = 'running', token = EXCLUDED.token, value = NULL, expires_at_ms = EXCLUDED.expires_at_ms
      WHERE k.expires_at_ms <= v_now
    RETURNING * INTO v_row;
  IF FOUND THEN
    RETURN jsonb_build_object('state', 'run');
  END IF;
  -- The key is live (the insert found it and left it locked): report it.
  SELECT * INTO v_row FROM {{schema}}.idempotency_keys k WHERE k.key = p_key;
  IF v_row.state = 'done' THEN
    RETURN jsonb_build_object('state', 'done', 'value', v_row.value);
  END IF;
  RETURN jsonb_build_object('state', 'wait', 'expiresInMs', greatest(0, v_row.expires_at_ms - v_now));
END
$$;

-- Stores the outcome once: true when p_token held the claim, or its claim expired and nobody took the
-- key since; false when the key is done already or another caller claimed it.
CREATE FUNCTION {{schema}}.idempotency_finish(
  p_key text, p_token text, p_value text, p_ttl_ms bigint, p_now_ms bigint
) RETURNS boolean
LANGUAGE sql AS $$
  WITH now AS (SELECT {{schema}}.now_ms(p_now_ms) AS ms),
  stored AS (
    INSERT INTO {{schema}}.idempotency_keys AS k (key, state, token, value, expires_at_ms)
      SELECT p_key, 'done', NULL, p_value, now.ms + p_ttl_ms FROM now
      ON CONFLICT (key) DO UPDATE
        SET state = 'done', token = NULL, value = EXCLUDED.value, expires_at_ms = EXCLUDED.expires_at_ms
        WHERE k.expires_at_ms <= (SELECT ms FROM now) OR (k.state = 'running' AND k.token = p_token)
      RETURNING 1
  )
  SELECT EXISTS (SELECT 1 FROM stored)
$$;

-- Drops p_token's live claim after a failure so a retry may run; false when it no longer held it.
CREATE FUNCTION {{schema}}.idempotency_release(p_key text, p_token text, p_now_ms bigint) RETURNS boolean
LANGUAGE sql AS $$
  WITH released AS (
    DELETE FROM {{schema}}.idempotency_keys k
      WHERE k.key = p_key AND k.state = 'running' AND k.token = p_token
        AND k.expires_at_ms > {{schema}}.now_ms(p_now_ms)
      RETURNING 1
  )
  SELECT EXISTS (SELECT 1 FROM released)
$$;

-- Extends p_token's live claim by p_ttl_ms from now; false when it was lost.
CREATE FUNCTION {{schema}}.idempotency_renew(p_key text, p_token text, p_ttl_ms bigint, p_now_ms bigint)
RETURNS boolean
LANGUAGE sql AS $$
  WITH now AS (SELECT {{schema}}.now_ms(p_now_ms) AS ms),
  renewed AS (
    UPDATE {{schema}}.idempotency_keys k SET expires_at_ms = (SELECT ms FROM now) + p_ttl_ms
      WHERE k.key = p_key AND k.state = 'running' AND k.token = p_token
        AND k.expires_at_ms > (SELECT ms FROM now)
      RETURNING 1
  )
  SELECT EXISTS (SELECT 1 FROM renewed)
$$;
