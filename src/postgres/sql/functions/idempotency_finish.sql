-- idempotency_finish(), as 007-idempotency-finish-again.sql last defined it. Applied after the migrations whenever
-- this file changes (src/postgres/migrations.ts); {{schema}} is the quoted schema name.

-- Stores the outcome once: true when p_token held the claim, or its claim expired and nobody took the
-- key since, or the key is done already with p_token and p_value (this caller's earlier finish landed);
-- false when the key is done with another token or outcome, or another caller claimed it.
CREATE OR REPLACE FUNCTION {{schema}}.idempotency_finish(
  p_prefix text, p_key text, p_token text, p_value text, p_ttl_ms bigint, p_now_ms bigint
) RETURNS boolean
LANGUAGE sql AS $$
  WITH now AS (SELECT {{schema}}.now_ms(p_now_ms) AS ms),
  stored AS (
    INSERT INTO {{schema}}.idempotency_keys AS k (prefix, key, state, token, value, expires_at_ms)
      SELECT p_prefix, p_key, 'done', p_token, p_value, now.ms + p_ttl_ms FROM now
      ON CONFLICT (prefix, key) DO UPDATE
        SET state = 'done', token = EXCLUDED.token, value = EXCLUDED.value, expires_at_ms = EXCLUDED.expires_at_ms
        WHERE k.expires_at_ms <= (SELECT ms FROM now)
          OR (k.state = 'running' AND k.token = p_token)
          OR (k.state = 'done' AND k.token = p_token AND k.value = p_value)
      RETURNING 1
  )
  SELECT EXISTS (SELECT 1 FROM stored)
$$;
