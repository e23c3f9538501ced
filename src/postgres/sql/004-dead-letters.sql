-- 004-dead-letters.sql: the dead-letter store and the jobs' attempt states, with the contract of
-- src/runtime/contracts.ts (DeadLetterStore; checked by src/runtime/dead-letter-store.case.ts) and the
-- layout of the Redis store (src/redis/lua/includes/dead-letters.lua) in tables:
--
-- dead_letter_queues  the registry: one row per (prefix, queue), with its retention limits, the last
--                     record id given out (never reset, so an id is never reused), how many records it
--                     holds and how many retention evicted.
-- dead_letters        one row per record: the record's JSON as filed (text, so a record that does not
--                     read is kept and listed as malformed), the indexed fields, and a replay claim.
--                     Indexes per queue on time and on reason, dependency and name (each then time, id):
--                     a listing or count walks the filter's index, not the queue.
-- attempt_states      a job's attempt state, per (queue, job id, createdAt), until it expires.
--
-- Times are epoch ms; "now" is the server's clock (now_ms, from 001-breaker.sql) unless a test passes one.

CREATE TABLE {{schema}}.dead_letter_queues (
  prefix text NOT NULL,
  queue text NOT NULL,
  registered_at_ms bigint NOT NULL,
  max_age_ms bigint,
  max_count bigint,
  last_id bigint NOT NULL DEFAULT 0,
  records bigint NOT NULL DEFAULT 0,
  evicted bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (prefix, queue)
);

CREATE TABLE {{schema}}.dead_letters (
  prefix text NOT NULL,
  queue text NOT NULL,
  id bigint NOT NULL,
  job_id text NOT NULL,
  created_at double precision NOT NULL,
  reason text NOT NULL,
  dependency text NOT NULL,
  name text NOT NULL,
  dead_lettered_at double precision NOT NULL,
  record text NOT NULL,
  claim_job_id text,
  claimed_at_ms bigint,
  PRIMARY KEY (prefix, queue, id)
);
CREATE INDEX dead_letters_by_time ON {{schema}}.dead_letters (prefix, queue, dead_lettered_at, id);
CREATE INDEX dead_letters_by_reason ON {{schema}}.dead_letters (prefix, queue, reason, dead_lettered_at, id);
CREATE INDEX dead_letters_by_dependency ON {{schema}}.dead_letters (prefix, queue, dependency, dead_lettered_at, id);
CREATE INDEX dead_letters_by_name ON {{schema}}.dead_letters (prefix, queue, name, dead_lettered_at, id);

CREATE TABLE {{schema}}.attempt_states (
  prefix text NOT NULL,
  queue text NOT NULL,
  job_id text NOT NULL,
  created_at double precision NOT NULL,
  state text NOT NULL,
  expires_at_ms bigint NOT NULL,
  PRIMARY KEY (prefix, queue, job_id, created_at)
);
CREATE INDEX attempt_states_expiry ON {{schema}}.attempt_states (expires_at_ms);

-- Registers a queue (once: the first registration time stays) and, when p_set_retention, sets its limits.
CREATE FUNCTION {{schema}}.dead_letter_register(
  p_prefix text, p_queue text, p_set_retention boolean, p_max_age_ms bigint, p_max_count bigint, p_now_ms bigint
) RETURNS void
LANGUAGE sql AS $$
  INSERT INTO {{schema}}.dead_letter_queues AS q (prefix, queue, registered_at_ms, max_age_ms, max_count)
    VALUES (p_prefix, p_queue, {{schema}}.now_ms(p_now_ms),
            CASE WHEN p_set_retention THEN p_max_age_ms END, CASE WHEN p_set_retention THEN p_max_count END)
    ON CONFLICT (prefix, queue) DO UPDATE
      SET max_age_ms = CASE WHEN p_set_retention THEN EXCLUDED.max_age_ms ELSE q.max_age_ms END,
          max_count = CASE WHEN p_set_retention THEN EXCLUDED.max_count ELSE q.max_count END
$$;

-- Writes a job's attempt state for p_ttl_ms, removing up to 4 expired states (of any job) on the way.
CREATE FUNCTION {{schema}}.attempts_write(
  p_prefix text, p_queue text, p_job_id text, p_created_at double precision, p_state text, p_ttl_ms bigint,
  p_now_ms bigint
) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  v_now bigint := {{schema}}.now_ms(p_now_ms);
BEGIN
  DELETE FROM {{schema}}.attempt_states a WHERE (a.prefix, a.queue, a.job_id, a.created_at) IN (
    SELECT e.prefix, e.queue, e.job_id, e.created_at FROM {{schema}}.attempt_states e
    WHERE e.expires_at_ms <= v_now ORDER BY e.expires_at_ms LIMIT 4 FOR UPDATE SKIP LOCKED);
  INSERT INTO {{schema}}.attempt_states (prefix, queue, job_id, created_at, state, expires_at_ms)
    VALUES (p_prefix, p_queue, p_job_id, p_created_at, p_state, v_now + p_ttl_ms)
    ON CONFLICT (prefix, queue, job_id, created_at) DO UPDATE
      SET state = EXCLUDED.state, expires_at_ms = EXCLUDED.expires_at_ms;
END
$$;

-- Removes one record; true when it was there.
CREATE FUNCTION {{schema}}.dead_letter_remove(p_prefix text, p_queue text, p_id bigint) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM {{schema}}.dead_letters d WHERE d.prefix = p_prefix AND d.queue = p_queue AND d.id = p_id;
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  UPDATE {{schema}}.dead_letter_queues q SET records = q.records - 1
    WHERE q.prefix = p_prefix AND q.queue = p_queue;
  RETURN true;
END
$$;

-- Files a record and writes the job's final attempt state, atomically, then applies the queue's retention
-- (at most p_max_evictions of the oldest records go, counted in evicted). The job's attempt state is the
-- text p_state_head || <the new id> || p_state_tail. Filing the same job (queue, job id, createdAt) while
-- its attempt state lives and names a record returns that record's id and writes nothing.
-- Returns { created: boolean, id: text }.
CREATE FUNCTION {{schema}}.dead_letter_file(
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
  v_evicted integer := 0;
  v_oldest record;
BEGIN
  INSERT INTO {{schema}}.dead_letter_queues (prefix, queue, registered_at_ms)
    VALUES (p_prefix, p_queue, v_now) ON CONFLICT DO NOTHING;
  -- The queue's row is the lock: filings of one queue (and of one job) take their turns.
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

  IF v_queue.max_age_ms IS NOT NULL OR v_queue.max_count IS NOT NULL THEN
    WHILE v_evicted < p_max_evictions LOOP
      SELECT d.id, d.dead_lettered_at INTO v_oldest FROM {{schema}}.dead_letters d
        WHERE d.prefix = p_prefix AND d.queue = p_queue ORDER BY d.dead_lettered_at, d.id LIMIT 1;
      EXIT WHEN NOT FOUND;
      EXIT WHEN NOT (
        (v_queue.max_count IS NOT NULL AND v_queue.records + 1 - v_evicted > v_queue.max_count)
        OR (v_queue.max_age_ms IS NOT NULL AND v_oldest.dead_lettered_at < v_now - v_queue.max_age_ms));
      DELETE FROM {{schema}}.dead_letters d WHERE d.prefix = p_prefix AND d.queue = p_queue AND d.id = v_oldest.id;
      v_evicted := v_evicted + 1;
    END LOOP;
  END IF;
  UPDATE {{schema}}.dead_letter_queues q
    SET last_id = v_id, records = q.records + 1 - v_evicted, evicted = q.evicted + v_evicted
    WHERE q.prefix = p_prefix AND q.queue = p_queue;
  RETURN jsonb_build_object('created', true, 'id', v_id::text);
END
$$;

-- Claims a record for replay under p_job_id, or returns the claim an earlier replay left; NULL when the
-- record is gone. Returns { jobId, claimedAt }.
CREATE FUNCTION {{schema}}.dead_letter_claim(
  p_prefix text, p_queue text, p_id bigint, p_job_id text, p_now_ms bigint
) RETURNS jsonb
LANGUAGE sql AS $$
  UPDATE {{schema}}.dead_letters d
    SET claim_job_id = coalesce(d.claim_job_id, p_job_id),
        claimed_at_ms = coalesce(d.claimed_at_ms, {{schema}}.now_ms(p_now_ms))
    WHERE d.prefix = p_prefix AND d.queue = p_queue AND d.id = p_id
    RETURNING jsonb_build_object('jobId', d.claim_job_id, 'claimedAt', d.claimed_at_ms)
$$;
