-- limits_state(), as 012-limits.sql last defined it. Applied after the migrations whenever
-- this file changes (src/postgres/migrations.ts); {{schema}} is the quoted schema name.

-- The LimitState of src/runtime/limits/store.ts at p_now (already resolved: see now_ms), plus `live`:
-- true when a declaration, a lease, the override or the hold lives. Reads only: what has expired reads
-- as absent.
CREATE OR REPLACE FUNCTION {{schema}}.limits_state(p_prefix text, p_dependency text, p_now bigint)
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
