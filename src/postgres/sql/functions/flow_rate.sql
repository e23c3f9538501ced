-- flow_rate(), as 008-flow-control.sql last defined it. Applied after the migrations whenever
-- this file changes (src/postgres/migrations.ts); {{schema}} is the quoted schema name.

-- Attempts per second admitted p_elapsed ms after recovery (NULL: not recovering); -1 is unlimited.
-- slowStartRate() of src/runtime/flow-control/slow-start.ts: floor × 2^(10 × elapsed / slowStartMs)
-- during the ramp, never above the ceiling (p_max_rate, NULL for none).
CREATE OR REPLACE FUNCTION {{schema}}.flow_rate(
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
