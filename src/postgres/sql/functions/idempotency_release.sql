-- idempotency_release(), as 002-idempotency.sql last defined it. Applied after the migrations whenever
-- this file changes (src/postgres/migrations.ts); {{schema}} is the quoted schema name.

-- Drops p_token's live claim after a failure so a retry may run; false when it no longer held it.
CREATE OR REPLACE FUNCTION {{schema}}.idempotency_release(p_prefix text, p_key text, p_token text, p_now_ms bigint) RETURNS boolean
LANGUAGE sql AS $$
  WITH released AS (
    DELETE FROM {{schema}}.idempotency_keys k
      WHERE k.prefix = p_prefix AND k.key = p_key AND k.state = 'running' AND k.token = p_token
        AND k.expires_at_ms > {{schema}}.now_ms(p_now_ms)
      RETURNING 1
  )
  SELECT EXISTS (SELECT 1 FROM released)
$$;
