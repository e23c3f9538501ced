-- idempotency_begin(), as 002-idempotency.sql last defined it. Applied after the migrations whenever
-- this file changes (src/postgres/migrations.ts); {{schema}} is the quoted schema name.

-- Claims p_key for p_token for p_ttl_ms, or reports what holds it:
--   { state: 'run' }                     the key was free: the caller holds it now
--   { state: 'done', value }             the work finished before: value is the stored outcome (JSON)
--   { state: 'wait', expiresInMs }       another caller runs it; its claim expires in expiresInMs
CREATE OR REPLACE FUNCTION {{schema}}.idempotency_begin(p_prefix text, p_key text, p_token text, p_ttl_ms bigint, p_now_ms bigint)
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
