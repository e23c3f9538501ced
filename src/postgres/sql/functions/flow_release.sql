-- flow_release(), as 008-flow-control.sql last defined it. Applied after the migrations whenever
-- this file changes (src/postgres/migrations.ts); {{schema}} is the quoted schema name.

-- Takes, oldest first, up to p_max parked jobs whose ramp slots start within p_horizon_ms (paceMany() of
-- src/runtime/flow-control/pacing.ts: a slot exactly at a non-zero horizon belongs to the next call), and
-- marks each released for p_ttl_ms. Returns their ids, in order.
CREATE OR REPLACE FUNCTION {{schema}}.flow_release(
  p_prefix text, p_dependency text, p_queue text, p_slow_start_ms double precision, p_floor double precision,
  p_max_rate double precision, p_max bigint, p_horizon_ms double precision, p_ttl_ms bigint,
  p_now_ms bigint
) RETURNS text[]
LANGUAGE plpgsql AS $$
DECLARE
  v_now bigint := {{schema}}.now_ms(p_now_ms);
  l {{schema}}.flow_park_lists%ROWTYPE;
  r {{schema}}.flow_state%ROWTYPE;
  v_live boolean;
  v_available bigint;
  v_rate double precision;
  v_tat double precision := v_now;
  v_slot double precision;
  v_granted bigint;
  v_ids text[];
BEGIN
  SELECT * INTO l FROM {{schema}}.flow_park_lists pl
    WHERE pl.prefix = p_prefix AND pl.dependency = p_dependency AND pl.queue = p_queue FOR UPDATE;
  IF NOT FOUND OR l.expires_at_ms <= v_now THEN
    RETURN '{}';
  END IF;
  v_available := least(p_max, l.length);
  IF v_available <= 0 THEN
    RETURN '{}';
  END IF;
  SELECT * INTO r FROM {{schema}}.flow_state s
    WHERE s.prefix = p_prefix AND s.dependency = p_dependency FOR UPDATE;
  v_live := FOUND AND r.expires_at_ms > v_now;
  v_rate := {{schema}}.flow_rate(CASE WHEN v_live THEN v_now - r.recovered_at_ms END, p_slow_start_ms,
    p_floor, p_max_rate);
  v_granted := v_available;
  IF v_rate >= 0 THEN
    v_tat := CASE WHEN v_live THEN r.tat_ms ELSE 0 END;
    v_granted := 0;
    WHILE v_granted < v_available LOOP
      v_slot := greatest(v_tat, v_now);
      EXIT WHEN v_slot - v_now > p_horizon_ms OR (v_slot - v_now >= p_horizon_ms AND p_horizon_ms > 0);
      v_tat := v_slot + 1000 / v_rate;
      v_granted := v_granted + 1;
    END LOOP;
  END IF;
  IF v_granted = 0 THEN
    RETURN '{}';
  END IF;
  PERFORM set_config('synchronous_commit', 'off', true);
  WITH taken AS (
    DELETE FROM {{schema}}.flow_parked e
      WHERE e.prefix = p_prefix AND e.dependency = p_dependency AND e.queue = p_queue
        AND e.seq IN (SELECT o.seq FROM {{schema}}.flow_parked o
          WHERE o.prefix = p_prefix AND o.dependency = p_dependency AND o.queue = p_queue
          ORDER BY o.seq LIMIT v_granted)
      RETURNING e.seq, e.job_id
  )
  SELECT array_agg(t.job_id ORDER BY t.seq) INTO v_ids FROM taken t;
  UPDATE {{schema}}.flow_park_lists pl SET length = pl.length - coalesce(array_length(v_ids, 1), 0)
    WHERE pl.prefix = p_prefix AND pl.dependency = p_dependency AND pl.queue = p_queue;
  IF v_rate >= 0 THEN
    INSERT INTO {{schema}}.flow_state AS s (prefix, dependency, tat_ms, expires_at_ms)
      VALUES (p_prefix, p_dependency, v_tat, v_now + p_ttl_ms)
      ON CONFLICT (prefix, dependency) DO UPDATE SET
        tat_ms = EXCLUDED.tat_ms,
        down = CASE WHEN s.expires_at_ms > v_now THEN s.down ELSE false END,
        recovered_at_ms = CASE WHEN s.expires_at_ms > v_now THEN s.recovered_at_ms END,
        expires_at_ms = EXCLUDED.expires_at_ms;
  END IF;
  -- Marks a run never claimed (its job ended another way) go once they expire.
  DELETE FROM {{schema}}.flow_released m
    WHERE m.prefix = p_prefix AND m.dependency = p_dependency AND m.queue = p_queue
      AND m.expires_at_ms <= v_now;
  INSERT INTO {{schema}}.flow_released AS m (prefix, dependency, queue, job_id, expires_at_ms)
    SELECT DISTINCT p_prefix, p_dependency, p_queue, id, v_now + p_ttl_ms FROM unnest(v_ids) id
    ON CONFLICT (prefix, dependency, queue, job_id) DO UPDATE SET expires_at_ms = EXCLUDED.expires_at_ms;
  RETURN coalesce(v_ids, '{}');
END
$$;
