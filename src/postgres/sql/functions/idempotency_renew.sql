-- idempotency_renew(), as 002-idempotency.sql last defined it. Applied after the migrations whenever
-- this file changes (src/postgres/migrations.ts); {{schema}} is the quoted schema name.

-- Extends p_token's live claim by p_ttl_ms from now; false when it was lost.
CREATE OR REPLACE FUNCTION {{schema}}.idempotency_renew(p_prefix text, p_key text, p_token text, p_ttl_ms bigint, p_now_ms bigint)
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
