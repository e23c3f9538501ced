-- 008-flow-control.sql: flow control's fleet-wide state (src/runtime/flow-control/store.ts): per
-- dependency the down mark, the recovery time that starts slow start and the pacer's state; per
-- dependency and queue the park list and the released marks; one kill switch per prefix.
--
-- The ramp and the pacer are the pure functions of src/runtime/flow-control (slow-start.ts, pacing.ts),
-- as src/redis/lua/includes/flow.lua runs them in Lua; the conformance suite in
-- src/runtime/flow-control/store.case.ts holds every store to the same behaviour. Each function is one
-- round trip and locks what it changes: a dependency's row for the pacer (admit, release, mark), a park
-- list's row for its entries (park, release), always in that order (list, then dependency). A row whose
-- expires_at_ms has passed reads as absent, as an expired Redis key.

-- flow_state: down while a worker saw the breaker open and none has seen it recover since;
-- recovered_at_ms when it last recovered; tat_ms the pacer's theoretical arrival time (fractional).
CREATE TABLE {{schema}}.flow_state (
  prefix text NOT NULL,
  dependency text NOT NULL,
  down boolean NOT NULL DEFAULT false,
  recovered_at_ms bigint,
  tat_ms double precision NOT NULL DEFAULT 0,
  expires_at_ms bigint NOT NULL,
  PRIMARY KEY (prefix, dependency)
);

-- A park list: its length and the sequence number of its next entry (entries are taken in seq order),
-- and when the whole list expires (each park pushes it back, as PEXPIRE on the Redis list).
CREATE TABLE {{schema}}.flow_park_lists (
  prefix text NOT NULL,
  dependency text NOT NULL,
  queue text NOT NULL,
  length bigint NOT NULL,
  next_seq bigint NOT NULL,
  expires_at_ms bigint NOT NULL,
  PRIMARY KEY (prefix, dependency, queue)
);

CREATE TABLE {{schema}}.flow_parked (
  prefix text NOT NULL,
  dependency text NOT NULL,
  queue text NOT NULL,
  seq bigint NOT NULL,
  job_id text NOT NULL,
  PRIMARY KEY (prefix, dependency, queue, seq)
);

-- Jobs a release took whose run already holds a ramp slot; claimed (deleted) once by that run.
CREATE TABLE {{schema}}.flow_released (
  prefix text NOT NULL,
  dependency text NOT NULL,
  queue text NOT NULL,
  job_id text NOT NULL,
  expires_at_ms bigint NOT NULL,
  PRIMARY KEY (prefix, dependency, queue, job_id)
);

-- The kill switch: a row while flow control is off for every worker of the prefix.
CREATE TABLE {{schema}}.flow_off (
  prefix text PRIMARY KEY
);

-- Attempts per second admitted p_elapsed ms after recovery (NULL: not recovering); -1 is unlimited.
-- slowStartRate() of src/runtime/flow-control/slow-start.ts: floor × 2^(10 × elapsed / slowStartMs)
-- during the ramp, never above the ceiling (p_max_rate, NULL for none).
CREATE FUNCTION {{schema}}.flow_rate(
  p_elapsed bigint, p_slow_start_ms double precision, p_floor double precision, p_max_rate double precision
) RETURNS double precision
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE
    WHEN p_elapsed IS NOT NULL AND p_elapsed < p_slow_start_ms THEN
      least(p_floor * power(2::double precision, 10 * greatest(p_elapsed, 0)::double precision / p_slow_start_ms),
        coalesce(p_max_rate, 'Infinity'::double precision))
    ELSE coalesce(p_max_rate, -1)
  END
$$;

-- Marks a dependency down or up, or reads it: p_op 'down' | 'up' | 'read' ('read' writes nothing). Up
-- starts the ramp only when the dependency was down: the recovery time becomes now and the pacer starts
-- afresh. Returns { down, recoveredAtMs (null when never), nowMs, off }.
CREATE FUNCTION {{schema}}.flow_mark(
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

-- Reserves one attempt slot under the dependency's ramp (pace() of src/runtime/flow-control/pacing.ts):
-- refused, reserving nothing, when the slot is more than p_max_wait_ms away. Returns
-- { granted, waitMs, tatMs }.
CREATE FUNCTION {{schema}}.flow_admit(
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

-- Appends a job to the dependency's park list of p_queue; the list expires p_ttl_ms after its last
-- park. Returns the list's length.
CREATE FUNCTION {{schema}}.flow_park(
  p_prefix text, p_dependency text, p_queue text, p_job_id text, p_ttl_ms bigint, p_now_ms bigint
) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
  v_now bigint := {{schema}}.now_ms(p_now_ms);
  v_expired boolean;
  v_seq bigint;
  v_length bigint;
BEGIN
  INSERT INTO {{schema}}.flow_park_lists AS l (prefix, dependency, queue, length, next_seq, expires_at_ms)
    VALUES (p_prefix, p_dependency, p_queue, 0, 0, 0)
    ON CONFLICT (prefix, dependency, queue) DO NOTHING;
  SELECT l.expires_at_ms <= v_now INTO v_expired FROM {{schema}}.flow_park_lists l
    WHERE l.prefix = p_prefix AND l.dependency = p_dependency AND l.queue = p_queue FOR UPDATE;
  IF v_expired THEN
    -- An expired list is gone, as in Redis: its leftover entries go with it.
    DELETE FROM {{schema}}.flow_parked e
      WHERE e.prefix = p_prefix AND e.dependency = p_dependency AND e.queue = p_queue;
  END IF;
  UPDATE {{schema}}.flow_park_lists l SET
    length = CASE WHEN v_expired THEN 1 ELSE l.length + 1 END,
    next_seq = l.next_seq + 1,
    expires_at_ms = v_now + p_ttl_ms
  WHERE l.prefix = p_prefix AND l.dependency = p_dependency AND l.queue = p_queue
  RETURNING l.next_seq - 1, l.length INTO v_seq, v_length;
  INSERT INTO {{schema}}.flow_parked (prefix, dependency, queue, seq, job_id)
    VALUES (p_prefix, p_dependency, p_queue, v_seq, p_job_id);
  RETURN v_length;
END
$$;

-- Takes, oldest first, up to p_max parked jobs whose ramp slots start within p_horizon_ms (paceMany() of
-- src/runtime/flow-control/pacing.ts: a slot exactly at a non-zero horizon belongs to the next call), and
-- marks each released for p_ttl_ms. Returns their ids, in order.
CREATE FUNCTION {{schema}}.flow_release(
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
