-- limits_set(), as 012-limits.sql last defined it. Applied after the migrations whenever
-- this file changes (src/postgres/migrations.ts); {{schema}} is the quoted schema name.

-- p_op 'hold': holds the dependency for p_for_ms from now (holdLimits of src/runtime/limits/store.ts: a
-- longer hold already set wins; probing starts when it ends). p_op 'override': sets p_override (its
-- fields without times; NULL removes it), expiring p_expires_in_ms from now (NULL: never); with
-- p_clear_hold the hold, probing and the ramp go too. Returns the state (see limits_state).
CREATE OR REPLACE FUNCTION {{schema}}.limits_set(
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
