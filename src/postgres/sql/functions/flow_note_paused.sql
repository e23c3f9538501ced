-- flow_note_paused(), as 010-flow-paused.sql last defined it. Applied after the migrations whenever
-- this file changes (src/postgres/migrations.ts); {{schema}} is the quoted schema name.

-- Records or refreshes one worker's pause: until now + p_for_ms, expiring now + p_ttl_ms. since_ms stays
-- from the first note while the row lives. Drops the dependency's rows that have aged out.
CREATE OR REPLACE FUNCTION {{schema}}.flow_note_paused(
  p_prefix text, p_dependency text, p_queue text, p_worker text, p_for_ms bigint, p_ttl_ms bigint,
  p_now_ms bigint
) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  v_now bigint := {{schema}}.now_ms(p_now_ms);
BEGIN
  PERFORM set_config('synchronous_commit', 'off', true);
  DELETE FROM {{schema}}.flow_paused p
    WHERE p.prefix = p_prefix AND p.dependency = p_dependency AND p.expires_at_ms <= v_now
      AND NOT (p.queue = p_queue AND p.worker = p_worker);
  INSERT INTO {{schema}}.flow_paused AS p
      (prefix, dependency, queue, worker, since_ms, until_ms, expires_at_ms)
    VALUES (p_prefix, p_dependency, p_queue, p_worker, v_now, v_now + p_for_ms, v_now + p_ttl_ms)
    ON CONFLICT (prefix, dependency, queue, worker) DO UPDATE SET
      since_ms = CASE WHEN p.expires_at_ms > v_now THEN p.since_ms ELSE v_now END,
      until_ms = EXCLUDED.until_ms,
      expires_at_ms = EXCLUDED.expires_at_ms;
END
$$;
