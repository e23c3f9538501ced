-- now_ms(), as 001-breaker.sql last defined it. Applied after the migrations whenever
-- this file changes (src/postgres/migrations.ts); {{schema}} is the quoted schema name.

-- Epoch milliseconds from the server's clock (clock_timestamp(), not the transaction's start), or
-- override_ms when given (TEST ONLY: a conformance suite drives every store on one fake clock).
CREATE OR REPLACE FUNCTION {{schema}}.now_ms(override_ms bigint) RETURNS bigint
LANGUAGE sql VOLATILE AS $$
  SELECT coalesce(override_ms, floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint)
$$;
