-- limits_exchange(), as 012-limits.sql last defined it. Applied after the migrations whenever
-- this file changes (src/postgres/migrations.ts); {{schema}} is the quoted schema name.

-- One process's limits exchange for a dependency (LimitExchange of src/runtime/limits/store.ts, given as
-- p_request in its JSON form), in one call with the dependency's limit_state row locked: declare the
-- holder's limits, give back leases (a success after a hold ends probing and starts the ramp), renew
-- leases, then take leases in order until the first refusal (takeVerdict of
-- src/runtime/limits/limit-maths.ts; the ramp is flow_rate, slowStartRate). Returns { granted, waitMs,
-- refusedBy (absent when none), state (see limits_state) }.
CREATE OR REPLACE FUNCTION {{schema}}.limits_exchange(
  p_prefix text, p_dependency text, p_request jsonb, p_ttl_ms bigint, p_now_ms bigint
) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  v_now bigint := {{schema}}.now_ms(p_now_ms);
  v_lease_ms bigint := (p_request ->> 'leaseMs')::bigint;
  v_probes double precision := (p_request ->> 'probes')::double precision;
  r {{schema}}.limit_state;
  g jsonb;
  t jsonb;
  v_hold_live boolean;
  v_cap double precision;
  v_rate_limit double precision;
  v_in_flight bigint;
  v_held bigint;
  v_cost bigint;
  v_rate double precision;
  v_slot double precision;
  v_tat double precision;
  v_granted integer := 0;
  v_wait double precision := 0;
  v_refused text;
BEGIN
  PERFORM set_config('synchronous_commit', 'off', true);
  r := {{schema}}.limits_lock(p_prefix, p_dependency, v_now);
  INSERT INTO {{schema}}.limit_declarations AS d
      (prefix, dependency, holder, max_in_flight, max_rate, expires_at_ms)
    VALUES (p_prefix, p_dependency, p_request ->> 'holder',
      (p_request -> 'declared' ->> 'maxInFlight')::double precision,
      (p_request -> 'declared' ->> 'maxRatePerSecond')::double precision, v_now + v_lease_ms)
    ON CONFLICT (prefix, dependency, holder) DO UPDATE SET
      max_in_flight = EXCLUDED.max_in_flight, max_rate = EXCLUDED.max_rate,
      expires_at_ms = EXCLUDED.expires_at_ms;

  FOR g IN SELECT value FROM jsonb_array_elements(p_request -> 'give') LOOP
    DELETE FROM {{schema}}.limit_leases l
      WHERE l.prefix = p_prefix AND l.dependency = p_dependency AND l.lease = g ->> 'lease';
    IF (g ->> 'ok')::boolean AND r.probing AND NOT coalesce(r.hold_until_ms > v_now, false) THEN
      r.probing := false;
      r.hold_until_ms := NULL;
      r.hold_set_at_ms := NULL;
      r.hold_reason := NULL;
      r.recovered_at_ms := v_now;
      r.tat_ms := v_now;
    END IF;
  END LOOP;
  UPDATE {{schema}}.limit_leases l SET expires_at_ms = v_now + v_lease_ms
    WHERE l.prefix = p_prefix AND l.dependency = p_dependency
      AND l.lease IN (SELECT jsonb_array_elements_text(p_request -> 'renew'));

  v_hold_live := coalesce(r.hold_until_ms > v_now, false);
  SELECT coalesce((r.override ->> 'maxInFlight')::double precision, min(d.max_in_flight)),
         coalesce((r.override ->> 'maxRatePerSecond')::double precision, min(d.max_rate))
    INTO v_cap, v_rate_limit
    FROM {{schema}}.limit_declarations d WHERE d.prefix = p_prefix AND d.dependency = p_dependency;
  IF r.probing AND NOT v_hold_live AND (v_cap IS NULL OR v_probes < v_cap) THEN
    v_cap := v_probes;
  END IF;
  SELECT coalesce(sum(l.cost), 0) INTO v_in_flight FROM {{schema}}.limit_leases l
    WHERE l.prefix = p_prefix AND l.dependency = p_dependency;

  v_tat := r.tat_ms;
  FOR t IN SELECT value FROM jsonb_array_elements(p_request -> 'take') WITH ORDINALITY ORDER BY ordinality LOOP
    v_cost := (t ->> 'cost')::bigint;
    SELECT coalesce(max(l.cost), 0) INTO v_held FROM {{schema}}.limit_leases l
      WHERE l.prefix = p_prefix AND l.dependency = p_dependency AND l.lease = t ->> 'lease';
    IF coalesce((r.override ->> 'paused')::boolean, false) THEN
      v_refused := 'paused';
      v_wait := coalesce(r.override_expires_at_ms - v_now, 0);
    ELSIF v_hold_live THEN
      v_refused := 'hold';
      v_wait := r.hold_until_ms - v_now;
    ELSIF v_cap IS NOT NULL AND v_in_flight - v_held > 0 AND v_in_flight - v_held + v_cost > v_cap THEN
      v_refused := 'in-flight';
    ELSE
      v_rate := {{schema}}.flow_rate(v_now - r.recovered_at_ms, (p_request -> 'ramp' ->> 'slowStartMs')::double precision,
        (p_request -> 'ramp' ->> 'floorPerSecond')::double precision, v_rate_limit);
      IF v_rate < 0 THEN
        v_tat := v_now;
      ELSE
        v_slot := greatest(v_tat, v_now);
        IF v_slot - v_now > 0 THEN
          v_refused := 'rate';
          v_wait := v_slot - v_now;
        ELSE
          v_tat := v_slot + 1000 / (v_rate / v_cost);
        END IF;
      END IF;
    END IF;
    EXIT WHEN v_refused IS NOT NULL;
    INSERT INTO {{schema}}.limit_leases AS l (prefix, dependency, lease, cost, expires_at_ms)
      VALUES (p_prefix, p_dependency, t ->> 'lease', v_cost, v_now + v_lease_ms)
      ON CONFLICT (prefix, dependency, lease) DO UPDATE SET
        cost = EXCLUDED.cost, expires_at_ms = EXCLUDED.expires_at_ms;
    v_in_flight := v_in_flight - v_held + v_cost;
    v_granted := v_granted + 1;
  END LOOP;
  IF v_granted > 0 THEN
    r.tat_ms := v_tat;
  END IF;
  PERFORM {{schema}}.limits_store(r, v_now, p_ttl_ms, v_lease_ms);
  RETURN jsonb_strip_nulls(jsonb_build_object('granted', v_granted, 'waitMs', v_wait, 'refusedBy', v_refused,
    'state', {{schema}}.limits_state(p_prefix, p_dependency, v_now)));
END
$$;
