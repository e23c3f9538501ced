-- 012-limits.sql: fleet-wide limits per dependency (src/runtime/limits/store.ts, the LimitStore part of
-- the flow store): per dependency the pacer, the Retry-After hold and the probing after it, the operator's
-- override; each process's declaration of its code's limits; the leased in-flight slots. The functions
-- below (each as its file in sql/functions/ holds it) compute what src/runtime/limits/limit-maths.ts
-- computes, in one call per operation, and lock the dependency's limit_state row for every write, so each
-- slot is granted once fleet-wide. Rows whose expires_at_ms has passed read as absent.

-- tat_ms: the pacer's theoretical arrival time (fractional); recovered_at_ms: the first success after a
-- hold (its ramp runs from then); probing: from a hold until that success; override: the override's
-- fields without its times. expires_at_ms NULL: kept while an override without an expiry lives.
CREATE TABLE {{schema}}.limit_state (
  prefix text NOT NULL,
  dependency text NOT NULL,
  tat_ms double precision NOT NULL DEFAULT 0,
  recovered_at_ms bigint,
  probing boolean NOT NULL DEFAULT false,
  hold_until_ms bigint,
  hold_set_at_ms bigint,
  hold_reason text,
  override jsonb,
  override_set_at_ms bigint,
  override_expires_at_ms bigint,
  expires_at_ms bigint,
  PRIMARY KEY (prefix, dependency)
);

-- One row per declaring process (holder), living leaseMs past its last exchange.
CREATE TABLE {{schema}}.limit_declarations (
  prefix text NOT NULL,
  dependency text NOT NULL,
  holder text NOT NULL,
  max_in_flight double precision,
  max_rate double precision,
  expires_at_ms bigint NOT NULL,
  PRIMARY KEY (prefix, dependency, holder)
);

-- One row per lease (an in-flight slot of `cost` units), until given back or expired.
CREATE TABLE {{schema}}.limit_leases (
  prefix text NOT NULL,
  dependency text NOT NULL,
  lease text NOT NULL,
  cost bigint NOT NULL,
  expires_at_ms bigint NOT NULL,
  PRIMARY KEY (prefix, dependency, lease)
);

-- The LimitState of src/runtime/limits/store.ts at p_now (already resolved: see now_ms), plus `live`:
-- true when a declaration, a lease, the override or the hold lives. Reads only: what has expired reads
-- as absent.
CREATE FUNCTION {{schema}}.limits_state(p_prefix text, p_dependency text, p_now bigint)
RETURNS jsonb
LANGUAGE plpgsql STABLE AS $$
DECLARE
  r {{schema}}.limit_state%ROWTYPE;
  v_override jsonb;
  v_hold jsonb;
  v_decl_f double precision;
  v_decl_r double precision;
  v_decls bigint;
  v_in_flight bigint;
BEGIN
  SELECT * INTO r FROM {{schema}}.limit_state s
    WHERE s.prefix = p_prefix AND s.dependency = p_dependency
      AND (s.expires_at_ms IS NULL OR s.expires_at_ms > p_now);
  SELECT min(d.max_in_flight), min(d.max_rate), count(*) INTO v_decl_f, v_decl_r, v_decls
    FROM {{schema}}.limit_declarations d
    WHERE d.prefix = p_prefix AND d.dependency = p_dependency AND d.expires_at_ms > p_now;
  SELECT coalesce(sum(l.cost), 0) INTO v_in_flight FROM {{schema}}.limit_leases l
    WHERE l.prefix = p_prefix AND l.dependency = p_dependency AND l.expires_at_ms > p_now;
  IF r.override IS NOT NULL AND (r.override_expires_at_ms IS NULL OR r.override_expires_at_ms > p_now) THEN
    v_override := r.override || jsonb_build_object('setAtMs', r.override_set_at_ms)
      || jsonb_strip_nulls(jsonb_build_object('expiresAtMs', r.override_expires_at_ms));
  END IF;
  IF r.hold_until_ms > p_now THEN
    v_hold := jsonb_build_object('untilMs', r.hold_until_ms, 'reason', r.hold_reason,
      'setAtMs', r.hold_set_at_ms);
  END IF;
  RETURN jsonb_strip_nulls(jsonb_build_object(
    'dependency', p_dependency,
    'nowMs', p_now,
    'inFlight', v_in_flight,
    'declared', jsonb_build_object('maxInFlight', v_decl_f, 'maxRatePerSecond', v_decl_r),
    'effective', jsonb_build_object(
      'maxInFlight', coalesce((v_override ->> 'maxInFlight')::double precision, v_decl_f),
      'maxRatePerSecond', coalesce((v_override ->> 'maxRatePerSecond')::double precision, v_decl_r)),
    'override', v_override,
    'hold', v_hold,
    'probing', coalesce(r.probing, false) AND v_hold IS NULL,
    'recoveredAtMs', r.recovered_at_ms,
    'live', v_in_flight > 0 OR v_decls > 0 OR v_override IS NOT NULL OR v_hold IS NOT NULL));
END
$$;

-- The dependency's limit_state row, locked (created when absent; one expired is started afresh).
CREATE FUNCTION {{schema}}.limits_lock(p_prefix text, p_dependency text, p_now bigint)
RETURNS {{schema}}.limit_state
LANGUAGE plpgsql AS $$
DECLARE
  r {{schema}}.limit_state%ROWTYPE;
BEGIN
  INSERT INTO {{schema}}.limit_state (prefix, dependency, expires_at_ms)
    VALUES (p_prefix, p_dependency, p_now) ON CONFLICT (prefix, dependency) DO NOTHING;
  SELECT * INTO r FROM {{schema}}.limit_state s
    WHERE s.prefix = p_prefix AND s.dependency = p_dependency FOR UPDATE;
  IF r.expires_at_ms IS NOT NULL AND r.expires_at_ms <= p_now THEN
    r.tat_ms := 0;
    r.recovered_at_ms := NULL;
    r.probing := false;
    r.hold_until_ms := NULL;
    r.hold_set_at_ms := NULL;
    r.hold_reason := NULL;
    r.override := NULL;
  END IF;
  IF r.override IS NOT NULL AND r.override_expires_at_ms <= p_now THEN
    r.override := NULL;
  END IF;
  IF r.override IS NULL THEN
    r.override_set_at_ms := NULL;
    r.override_expires_at_ms := NULL;
  END IF;
  DELETE FROM {{schema}}.limit_leases l
    WHERE l.prefix = p_prefix AND l.dependency = p_dependency AND l.expires_at_ms <= p_now;
  DELETE FROM {{schema}}.limit_declarations d
    WHERE d.prefix = p_prefix AND d.dependency = p_dependency AND d.expires_at_ms <= p_now;
  RETURN r;
END
$$;

-- Writes back the row limits_lock returned. It expires p_ttl_ms (and the lease) after this write, later
-- while a hold or an override lasts, never while an override without an expiry lives (as limitsExpire of
-- src/redis/lua/includes/limits.lua).
CREATE FUNCTION {{schema}}.limits_store(
  r {{schema}}.limit_state, p_now bigint, p_ttl_ms bigint, p_lease_ms bigint
) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  UPDATE {{schema}}.limit_state s SET
    tat_ms = r.tat_ms, recovered_at_ms = r.recovered_at_ms, probing = r.probing,
    hold_until_ms = r.hold_until_ms, hold_set_at_ms = r.hold_set_at_ms, hold_reason = r.hold_reason,
    override = r.override, override_set_at_ms = r.override_set_at_ms,
    override_expires_at_ms = r.override_expires_at_ms,
    expires_at_ms = CASE
      WHEN r.override IS NOT NULL AND r.override_expires_at_ms IS NULL THEN NULL
      ELSE p_now + greatest(p_ttl_ms, p_lease_ms, coalesce(r.hold_until_ms - p_now + p_ttl_ms, 0),
        coalesce(r.override_expires_at_ms - p_now, 0))
    END
  WHERE s.prefix = r.prefix AND s.dependency = r.dependency;
END
$$;

-- One process's limits exchange for a dependency (LimitExchange of src/runtime/limits/store.ts, given as
-- p_request in its JSON form), in one call with the dependency's limit_state row locked: declare the
-- holder's limits, give back leases (a success after a hold ends probing and starts the ramp), renew
-- leases, then take leases in order until the first refusal (takeVerdict of
-- src/runtime/limits/limit-maths.ts; the ramp is flow_rate, slowStartRate). Returns { granted, waitMs,
-- refusedBy (absent when none), state (see limits_state) }.
CREATE FUNCTION {{schema}}.limits_exchange(
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

-- p_op 'hold': holds the dependency for p_for_ms from now (holdLimits of src/runtime/limits/store.ts: a
-- longer hold already set wins; probing starts when it ends). p_op 'override': sets p_override (its
-- fields without times; NULL removes it), expiring p_expires_in_ms from now (NULL: never); with
-- p_clear_hold the hold, probing and the ramp go too. Returns the state (see limits_state).
CREATE FUNCTION {{schema}}.limits_set(
  p_prefix text, p_dependency text, p_op text, p_for_ms bigint, p_reason text, p_override jsonb,
  p_expires_in_ms bigint, p_clear_hold boolean, p_ttl_ms bigint, p_now_ms bigint
) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  v_now bigint := {{schema}}.now_ms(p_now_ms);
  r {{schema}}.limit_state;
BEGIN
  IF p_op IS NULL OR p_op NOT IN ('hold', 'override') THEN
    RAISE EXCEPTION 'stormguard-limits: unknown op %', p_op USING ERRCODE = '22023';
  END IF;
  r := {{schema}}.limits_lock(p_prefix, p_dependency, v_now);
  IF p_op = 'hold' THEN
    IF NOT coalesce(r.hold_until_ms > v_now, false) OR r.hold_until_ms < v_now + p_for_ms THEN
      r.hold_until_ms := v_now + p_for_ms;
      r.hold_set_at_ms := v_now;
      r.hold_reason := p_reason;
      r.probing := true;
    END IF;
  ELSE
    r.override := p_override;
    r.override_set_at_ms := CASE WHEN p_override IS NOT NULL THEN v_now END;
    r.override_expires_at_ms := CASE WHEN p_override IS NOT NULL THEN v_now + p_expires_in_ms END;
    IF p_clear_hold THEN
      r.hold_until_ms := NULL;
      r.hold_set_at_ms := NULL;
      r.hold_reason := NULL;
      r.probing := false;
      r.recovered_at_ms := NULL;
    END IF;
  END IF;
  PERFORM {{schema}}.limits_store(r, v_now, p_ttl_ms, 0);
  RETURN {{schema}}.limits_state(p_prefix, p_dependency, v_now);
END
$$;
