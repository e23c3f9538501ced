-- flow_admit(), as 008-flow-control.sql last defined it. Applied after the migrations whenever
-- this file changes (src/postgres/migrations.ts); {{schema}} is the quoted schema name.

-- Reserves one attempt slot under the dependency's ramp (pace() of src/runtime/flow-control/pacing.ts):
-- refused, reserving nothing, when the slot is more than p_max_wait_ms away. Returns
-- { granted, waitMs, tatMs }.
CREATE OR REPLACE FUNCTION {{schema}}.flow_admit(
  p_prefix text, p_dependency text, p_slow_start_ms double precision, p_floor double precision,
  p_max_rate double precision, p_max_wait_ms double precision, p_ttl_ms bigint, p_now_ms bigint
) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  v_now bigint := {{schema}}.now_ms(p_now_ms);
  r {{schema}}.flow_state%ROWTYPE;
  v_live boolean;
  v_rate double precision;
  v_tat double precision := 0;
  v_slot double precision;
  v_wait double precision;
BEGIN
  SELECT * INTO r FROM {{schema}}.flow_state s
    WHERE s.prefix = p_prefix AND s.dependency = p_dependency FOR UPDATE;
  v_live := FOUND AND r.expires_at_ms > v_now;
  v_rate := {{schema}}.flow_rate(CASE WHEN v_live THEN v_now - r.recovered_at_ms END, p_slow_start_ms,
    p_floor, p_max_rate);
  IF v_rate < 0 THEN
    -- Unlimited: granted at once, and the pacer starts afresh from now.
    IF v_live THEN
      PERFORM set_config('synchronous_commit', 'off', true);
      UPDATE {{schema}}.flow_state s SET tat_ms = v_now
        WHERE s.prefix = p_prefix AND s.dependency = p_dependency;
    END IF;
    RETURN jsonb_build_object('granted', true, 'waitMs', 0, 'tatMs', v_now);
  END IF;
  IF NOT FOUND THEN
    -- A first pacing of a dependency never seen: create its row, locked (a concurrent first one waits).
    INSERT INTO {{schema}}.flow_state (prefix, dependency, expires_at_ms)
      VALUES (p_prefix, p_dependency, v_now + p_ttl_ms) ON CONFLICT (prefix, dependency) DO NOTHING;
    SELECT * INTO r FROM {{schema}}.flow_state s
      WHERE s.prefix = p_prefix AND s.dependency = p_dependency FOR UPDATE;
    v_live := r.expires_at_ms > v_now;
    v_rate := {{schema}}.flow_rate(CASE WHEN v_live THEN v_now - r.recovered_at_ms END, p_slow_start_ms,
      p_floor, p_max_rate);
    IF v_rate < 0 THEN
      RETURN jsonb_build_object('granted', true, 'waitMs', 0, 'tatMs', v_now);
    END IF;
  END IF;
  IF v_live THEN
    v_tat := r.tat_ms;
  END IF;
  v_slot := greatest(v_tat, v_now);
  v_wait := v_slot - v_now;
  IF v_wait > p_max_wait_ms THEN
    RETURN jsonb_build_object('granted', false, 'waitMs', v_wait, 'tatMs', v_tat);
  END IF;
  v_tat := v_slot + 1000 / v_rate;
  PERFORM set_config('synchronous_commit', 'off', true);
  UPDATE {{schema}}.flow_state s SET
    tat_ms = v_tat,
    down = CASE WHEN v_live THEN s.down ELSE false END,
    recovered_at_ms = CASE WHEN v_live THEN s.recovered_at_ms END,
    expires_at_ms = v_now + p_ttl_ms
  WHERE s.prefix = p_prefix AND s.dependency = p_dependency;
  RETURN jsonb_build_object('granted', true, 'waitMs', v_wait, 'tatMs', v_tat);
END
$$;
