-- flow_park(), as 008-flow-control.sql last defined it. Applied after the migrations whenever
-- this file changes (src/postgres/migrations.ts); {{schema}} is the quoted schema name.

-- Appends a job to the dependency's park list of p_queue; the list expires p_ttl_ms after its last
-- park. Returns the list's length.
CREATE OR REPLACE FUNCTION {{schema}}.flow_park(
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
