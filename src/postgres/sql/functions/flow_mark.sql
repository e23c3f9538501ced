-- flow_mark(), as 008-flow-control.sql last defined it. Applied after the migrations whenever
-- this file changes (src/postgres/migrations.ts); {{schema}} is the quoted schema name.

-- Marks a dependency down or up, or reads it: p_op 'down' | 'up' | 'read' ('read' writes nothing). Up
-- starts the ramp only when the dependency was down: the recovery time becomes now and the pacer starts
-- afresh. Returns { down, recoveredAtMs (null when never), nowMs, off }.
CREATE OR REPLACE FUNCTION {{schema}}.flow_mark(
  p_prefix text, p_dependency text, p_op text, p_ttl_ms bigint, p_now_ms bigint
) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  v_now bigint := {{schema}}.now_ms(p_now_ms);
  v_down boolean := false;
  v_rec bigint;
BEGIN
  IF p_op IS NULL OR p_op NOT IN ('down', 'up', 'read') THEN
    RAISE EXCEPTION 'stormguard-flow: unknown op %', p_op USING ERRCODE = '22023';
  END IF;
  IF p_op = 'down' THEN
    PERFORM set_config('synchronous_commit', 'off', true);
    INSERT INTO {{schema}}.flow_state AS s (prefix, dependency, down, expires_at_ms)
      VALUES (p_prefix, p_dependency, true, v_now + p_ttl_ms)
      ON CONFLICT (prefix, dependency) DO UPDATE SET
        down = true,
        recovered_at_ms = CASE WHEN s.expires_at_ms > v_now THEN s.recovered_at_ms END,
        tat_ms = CASE WHEN s.expires_at_ms > v_now THEN s.tat_ms ELSE 0 END,
        expires_at_ms = EXCLUDED.expires_at_ms
      RETURNING s.down, s.recovered_at_ms INTO v_down, v_rec;
  ELSE
    IF p_op = 'up' THEN
      PERFORM set_config('synchronous_commit', 'off', true);
      UPDATE {{schema}}.flow_state s SET
        down = false, recovered_at_ms = v_now, tat_ms = v_now, expires_at_ms = v_now + p_ttl_ms
      WHERE s.prefix = p_prefix AND s.dependency = p_dependency AND s.down AND s.expires_at_ms > v_now
      RETURNING s.down, s.recovered_at_ms INTO v_down, v_rec;
    END IF;
    IF NOT FOUND OR p_op = 'read' THEN
      SELECT s.down, s.recovered_at_ms INTO v_down, v_rec FROM {{schema}}.flow_state s
        WHERE s.prefix = p_prefix AND s.dependency = p_dependency AND s.expires_at_ms > v_now;
    END IF;
  END IF;
  RETURN jsonb_build_object('down', coalesce(v_down, false), 'recoveredAtMs', v_rec, 'nowMs', v_now,
    'off', EXISTS (SELECT 1 FROM {{schema}}.flow_off f WHERE f.prefix = p_prefix));
END
$$;
