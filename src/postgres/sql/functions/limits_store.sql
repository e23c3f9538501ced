-- limits_store(), as 012-limits.sql last defined it. Applied after the migrations whenever
-- this file changes (src/postgres/migrations.ts); {{schema}} is the quoted schema name.

-- Writes back the row limits_lock returned. It expires p_ttl_ms (and the lease) after this write, later
-- while a hold or an override lasts, never while an override without an expiry lives (as limitsExpire of
-- src/redis/lua/includes/limits.lua).
CREATE OR REPLACE FUNCTION {{schema}}.limits_store(
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
