-- dead_letter_file(), as 011-dead-letter-eviction.sql last defined it. Applied after the migrations whenever
-- this file changes (src/postgres/migrations.ts); {{schema}} is the quoted schema name.

-- Files a record and writes the job's final attempt state, atomically, then applies the queue's retention
-- to the other records (at most p_max_evictions of the oldest go, counted in evicted and returned). The
-- job's attempt state is the text p_state_head || <the new id> || p_state_tail. Filing the same job
-- (queue, job id, createdAt) while its attempt state lives and names a record returns that record's id and
-- writes nothing. Returns { created: boolean, id: text[, evicted: {...}] }.
CREATE OR REPLACE FUNCTION {{schema}}.dead_letter_file(
  p_prefix text, p_queue text, p_job_id text, p_created_at double precision, p_reason text,
  p_dependency text, p_name text, p_at double precision, p_record text, p_state_head text,
  p_state_tail text, p_ttl_ms bigint, p_max_evictions integer, p_now_ms bigint
) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  v_now bigint := {{schema}}.now_ms(p_now_ms);
  v_queue {{schema}}.dead_letter_queues%ROWTYPE;
  v_state text;
  v_known text;
  v_id bigint;
  v_records bigint;
  v_evicted integer := 0;
  v_too_old boolean;
  v_reasons jsonb := '{}'::jsonb;
  v_limits jsonb := '{}'::jsonb;
  v_limit text;
  v_oldest record;
  v_result jsonb;
BEGIN
  INSERT INTO {{schema}}.dead_letter_queues (prefix, queue, registered_at_ms)
    VALUES (p_prefix, p_queue, v_now) ON CONFLICT DO NOTHING;
  -- The queue's row is the lock: filings and removes of one queue (and filings of one job) take turns.
  SELECT * INTO v_queue FROM {{schema}}.dead_letter_queues q
    WHERE q.prefix = p_prefix AND q.queue = p_queue FOR UPDATE;
  SELECT a.state INTO v_state FROM {{schema}}.attempt_states a
    WHERE a.prefix = p_prefix AND a.queue = p_queue AND a.job_id = p_job_id AND a.created_at = p_created_at
      AND a.expires_at_ms > v_now;
  IF v_state IS NOT NULL THEN
    BEGIN
      v_known := v_state::json -> 'deadLettered' ->> 'recordId';
    EXCEPTION WHEN others THEN
      v_known := NULL;
    END;
    IF v_known IS NOT NULL THEN
      RETURN jsonb_build_object('created', false, 'id', v_known);
    END IF;
  END IF;

  v_id := v_queue.last_id + 1;
  INSERT INTO {{schema}}.dead_letters
    (prefix, queue, id, job_id, created_at, reason, dependency, name, dead_lettered_at, record)
    VALUES (p_prefix, p_queue, v_id, p_job_id, p_created_at, p_reason, p_dependency, p_name, p_at, p_record);
  PERFORM {{schema}}.attempts_write(p_prefix, p_queue, p_job_id, p_created_at,
    p_state_head || v_id::text || p_state_tail, p_ttl_ms, p_now_ms);

  v_records := v_queue.records + 1;
  IF v_queue.max_age_ms IS NOT NULL OR v_queue.max_count IS NOT NULL THEN
    WHILE v_evicted < p_max_evictions LOOP
      -- The oldest other record no one holds: a record a claim is updating right now waits for the next filing.
      SELECT d.id, d.dead_lettered_at, d.reason INTO v_oldest FROM {{schema}}.dead_letters d
        WHERE d.prefix = p_prefix AND d.queue = p_queue AND d.id <> v_id
        ORDER BY d.dead_lettered_at, d.id LIMIT 1 FOR UPDATE SKIP LOCKED;
      EXIT WHEN NOT FOUND;
      v_too_old := v_queue.max_age_ms IS NOT NULL AND v_oldest.dead_lettered_at < v_now - v_queue.max_age_ms;
      EXIT WHEN NOT (v_too_old OR (v_queue.max_count IS NOT NULL AND v_records > v_queue.max_count));
      DELETE FROM {{schema}}.dead_letters d
        WHERE d.prefix = p_prefix AND d.queue = p_queue AND d.id = v_oldest.id;
      v_evicted := v_evicted + 1;
      v_records := v_records - 1;
      v_limit := CASE WHEN v_too_old THEN 'maxAgeMs' ELSE 'maxCount' END;
      v_reasons := jsonb_set(v_reasons, ARRAY[v_oldest.reason],
        to_jsonb(coalesce((v_reasons ->> v_oldest.reason)::integer, 0) + 1));
      v_limits := jsonb_set(v_limits, ARRAY[v_limit],
        to_jsonb(coalesce((v_limits ->> v_limit)::integer, 0) + 1));
    END LOOP;
  END IF;
  UPDATE {{schema}}.dead_letter_queues q
    SET last_id = v_id, records = v_records, evicted = q.evicted + v_evicted
    WHERE q.prefix = p_prefix AND q.queue = p_queue;
  v_result := jsonb_build_object('created', true, 'id', v_id::text);
  IF v_evicted > 0 THEN
    v_result := v_result || jsonb_build_object('evicted',
      jsonb_build_object('count', v_evicted, 'reasons', v_reasons, 'limits', v_limits));
  END IF;
  RETURN v_result;
END
$$;
