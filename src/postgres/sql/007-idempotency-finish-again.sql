-- 007-idempotency-finish-again.sql: idempotency_finish answers a repeat by the caller that stored the
-- outcome, as src/redis/lua/idempotency-finish-1.lua does (checked by src/bullmq/idempotency-store.case.ts).
--
-- A done row now keeps the token that stored it, so a caller whose finish landed but whose reply was lost
-- can finish again with the same token and outcome and be told true instead of false (which the guard
-- reads as "another caller took the key"). Rows done before this migration hold no token: a repeat on
-- them is refused, as before.

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
