-- limits_lock(), as 012-limits.sql last defined it. Applied after the migrations whenever
-- this file changes (src/postgres/migrations.ts); {{schema}} is the quoted schema name.

-- The dependency's limit_state row, locked (created when absent; one expired is started afresh).
CREATE OR REPLACE FUNCTION {{schema}}.limits_lock(p_prefix text, p_dependency text, p_now bigint)
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
