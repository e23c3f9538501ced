-- breaker_step(), as 005-breaker-overrides.sql last defined it. Applied after the migrations whenever
-- this file changes (src/postgres/migrations.ts); {{schema}} is the quoted schema name.

-- One operation on one dependency's breaker, atomically: 001-breaker.sql's (whose comment documents
-- the arguments and the reply), plus the override ops
-- 'force-open' | 'force-closed' | 'reset' (p_override { reason, by } for the first two; an override uses
-- the stored options when there are any, p_options only for a breaker no worker has written).
CREATE OR REPLACE FUNCTION {{schema}}.breaker_step(
  p_prefix text, p_dependency text, p_op text, p_options jsonb, p_batched bigint, p_now_ms bigint,
  p_ticket text, p_override jsonb
) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  c_buckets CONSTANT bigint := 10;
  v_now bigint := {{schema}}.now_ms(p_now_ms);
  v_records boolean := p_op IN ('success', 'failure', 'successes');
  v_overrides boolean := p_op IN ('force-open', 'force-closed', 'reset');
  v_held jsonb;
  v_to text;
  r {{schema}}.breakers%ROWTYPE;
  o jsonb := p_options;
  v_bucket_ms bigint;
  v_cool_down bigint;
  v_state text := 'closed';
  v_cf bigint := 0;
  v_opened bigint;
  v_half_open bigint;
  v_half_opened bigint;
  v_probe_seq bigint[] := '{}';
  v_probe_at bigint[] := '{}';
  v_keep_seq bigint[];
  v_keep_at bigint[];
  v_is_probe boolean := false;
  v_ticket_period bigint;
  v_ticket_seq bigint;
  v_probe_pos int;
  v_ticket text;
  v_admitted bigint := 0;
  v_probe_ok bigint := 0;
  v_idx bigint[] := '{}';
  v_s bigint[] := '{}';
  v_f bigint[] := '{}';
  v_cur bigint;
  v_pos int;
  v_oldest bigint;
  v_successes bigint := 0;
  v_failures bigint := 0;
  v_transitions jsonb := '[]';
  v_allowed boolean := false;
  v_probe boolean := false;
  v_reopen text;
  v_view jsonb;
  i int;
BEGIN
  IF p_op IS NULL OR p_op NOT IN ('acquire', 'success', 'failure', 'peek', 'successes', 'force-open',
    'force-closed', 'reset') THEN
    RAISE EXCEPTION 'stormguard-breaker: unknown op %', p_op USING ERRCODE = '22023';
  END IF;
  IF p_batched IS NULL OR p_batched < 0 THEN
    RAISE EXCEPTION 'stormguard-breaker: batched successes must be a whole number >= 0'
      USING ERRCODE = '22023';
  END IF;
  IF o IS NULL AND p_op <> 'peek' THEN
    RAISE EXCEPTION 'stormguard-breaker: options are required for %', p_op USING ERRCODE = '22023';
  END IF;

  -- Reads take no lock; so does acquire until it finds a breaker that is not closed.
  SELECT * INTO r FROM {{schema}}.breakers b WHERE b.prefix = p_prefix AND b.dependency = p_dependency;
  IF FOUND AND r.expires_at_ms > v_now
    AND (v_records OR v_overrides OR (p_op = 'acquire' AND r.state <> 'closed')) THEN
    SELECT * INTO r FROM {{schema}}.breakers b
      WHERE b.prefix = p_prefix AND b.dependency = p_dependency FOR UPDATE;
  ELSIF v_records OR v_overrides THEN
    INSERT INTO {{schema}}.breakers (prefix, dependency) VALUES (p_prefix, p_dependency)
      ON CONFLICT (prefix, dependency) DO NOTHING;
    SELECT * INTO r FROM {{schema}}.breakers b
      WHERE b.prefix = p_prefix AND b.dependency = p_dependency FOR UPDATE;
  END IF;

  IF r.dependency IS NOT NULL AND r.expires_at_ms > v_now THEN
    o := CASE WHEN v_overrides THEN coalesce(r.options, o) ELSE coalesce(o, r.options) END;
    v_held := r.override;
    v_state := r.state;
    v_cf := r.consecutive_failures;
    v_opened := r.opened_at_ms;
    v_half_open := r.half_open_at_ms;
    v_half_opened := r.half_opened_at_ms;
    v_probe_seq := r.probe_seq;
    v_probe_at := r.probe_at_ms;
    v_admitted := r.probes_admitted;
    v_probe_ok := r.probe_successes;
  END IF;
  IF o IS NULL THEN
    RETURN jsonb_build_object('allowed', false, 'probe', false, 'transitions', '[]'::jsonb, 'view',
      jsonb_build_object('state', 'closed', 'successes', 0, 'failures', 0, 'volume', 0,
        'consecutiveFailures', 0, 'probesAdmitted', 0, 'probeSuccesses', 0, 'probesInFlight', 0,
        'nowMs', v_now),
      'options', NULL);
  END IF;
  v_bucket_ms := (o ->> 'bucketMs')::bigint;
  v_cool_down := (o ->> 'coolDownMs')::bigint;

  -- The live window: sub-buckets newer than (current - 10).
  v_oldest := floor(v_now::numeric / v_bucket_ms)::bigint - c_buckets;
  IF r.dependency IS NOT NULL AND r.expires_at_ms > v_now THEN
    FOR i IN 1 .. coalesce(array_length(r.bucket_index, 1), 0) LOOP
      IF r.bucket_index[i] > v_oldest THEN
        v_idx := v_idx || r.bucket_index[i];
        v_s := v_s || r.bucket_successes[i];
        v_f := v_f || r.bucket_failures[i];
      END IF;
    END LOOP;
  END IF;
  IF coalesce(array_length(v_idx, 1), 0) = 0 THEN
    v_cf := 0; -- a failure streak is only as old as the window
  END IF;

  IF v_state = 'open' AND coalesce(v_held ->> 'state', '') <> 'open'
    AND v_now >= coalesce(v_half_open, 0) THEN
    v_transitions := v_transitions || jsonb_build_object('from', v_state, 'to', 'half-open',
      'reason', 'cool-down-elapsed', 'atMs', v_now);
    v_state := 'half-open';
    v_admitted := 0;
    v_probe_ok := 0;
    v_half_opened := v_now;
    v_probe_seq := '{}';
    v_probe_at := '{}';
  END IF;
  -- Probes admitted a whole cool-down ago that never reported are presumed lost.
  v_keep_seq := '{}';
  v_keep_at := '{}';
  FOR i IN 1 .. coalesce(array_length(v_probe_seq, 1), 0) LOOP
    IF v_now < v_probe_at[i] + v_cool_down THEN
      v_keep_seq := v_keep_seq || v_probe_seq[i];
      v_keep_at := v_keep_at || v_probe_at[i];
    END IF;
  END LOOP;
  v_probe_seq := v_keep_seq;
  v_probe_at := v_keep_at;

  v_cur := floor(v_now::numeric / v_bucket_ms)::bigint;
  IF p_batched > 0 AND v_records THEN
    v_pos := array_position(v_idx, v_cur);
    IF v_pos IS NULL THEN
      v_idx := v_idx || v_cur;
      v_s := v_s || 0::bigint;
      v_f := v_f || 0::bigint;
      v_pos := array_length(v_idx, 1);
    END IF;
    v_s[v_pos] := v_s[v_pos] + p_batched;
    v_cf := 0;
  END IF;

  IF p_op = 'reset' THEN
    IF v_state <> 'closed' THEN
      v_transitions := v_transitions || jsonb_build_object('from', v_state, 'to', 'closed',
        'reason', 'reset', 'atMs', v_now);
    END IF;
    v_state := 'closed';
    v_cf := 0;
    v_opened := NULL;
    v_half_open := NULL;
    v_half_opened := NULL;
    v_probe_seq := '{}';
    v_probe_at := '{}';
    v_admitted := 0;
    v_probe_ok := 0;
    v_idx := '{}';
    v_s := '{}';
    v_f := '{}';
    v_held := NULL;
  ELSIF v_overrides THEN
    v_to := CASE WHEN p_op = 'force-open' THEN 'open' ELSE 'closed' END;
    IF v_state <> v_to THEN
      v_transitions := v_transitions || jsonb_build_object('from', v_state, 'to', v_to,
        'reason', CASE WHEN v_to = 'open' THEN 'forced-open' ELSE 'forced-closed' END, 'atMs', v_now);
      v_state := v_to;
      IF v_to = 'open' THEN
        v_opened := v_now;
      END IF;
    END IF;
    v_half_open := NULL;
    v_half_opened := NULL;
    v_probe_seq := '{}';
    v_probe_at := '{}';
    v_admitted := 0;
    v_probe_ok := 0;
    IF v_to = 'closed' THEN
      v_idx := '{}';
      v_s := '{}';
      v_f := '{}';
      v_cf := 0;
    END IF;
    v_held := jsonb_build_object('state', v_to, 'reason', coalesce(p_override ->> 'reason', ''),
      'by', coalesce(p_override ->> 'by', 'anonymous'), 'atMs', v_now);
  ELSIF p_op = 'acquire' THEN
    IF v_state = 'closed' THEN
      v_allowed := true;
    ELSIF v_state = 'half-open'
      AND coalesce(array_length(v_probe_seq, 1), 0) < (o ->> 'halfOpenProbes')::bigint THEN
      v_allowed := true;
      v_probe := true;
      v_admitted := v_admitted + 1;
      v_probe_seq := v_probe_seq || v_admitted;
      v_probe_at := v_probe_at || v_now;
      v_ticket := coalesce(v_half_opened, v_now)::text || ':' || v_admitted::text;
    END IF;
  ELSIF p_op IN ('success', 'failure') THEN
    v_pos := array_position(v_idx, v_cur);
    IF v_pos IS NULL THEN
      v_idx := v_idx || v_cur;
      v_s := v_s || 0::bigint;
      v_f := v_f || 0::bigint;
      v_pos := array_length(v_idx, 1);
    END IF;
    -- Only the outcome of a probe of this half-open period still in flight moves it; a ticket counts once.
    IF v_state = 'half-open' AND v_half_opened IS NOT NULL AND p_ticket ~ '^-?[0-9]{1,18}:[0-9]{1,18}$' THEN
      v_ticket_period := split_part(p_ticket, ':', 1)::bigint;
      v_ticket_seq := split_part(p_ticket, ':', 2)::bigint;
      v_probe_pos := array_position(v_probe_seq, v_ticket_seq);
      IF v_ticket_period = v_half_opened AND v_probe_pos IS NOT NULL THEN
        v_is_probe := true;
        v_probe_seq := v_probe_seq[:v_probe_pos - 1] || v_probe_seq[v_probe_pos + 1:];
        v_probe_at := v_probe_at[:v_probe_pos - 1] || v_probe_at[v_probe_pos + 1:];
      END IF;
    END IF;
    IF p_op = 'success' THEN
      v_s[v_pos] := v_s[v_pos] + 1;
      v_cf := 0;
      IF v_is_probe THEN
        v_probe_ok := v_probe_ok + 1;
        IF v_probe_ok >= (o ->> 'successesToClose')::bigint THEN
          v_transitions := v_transitions || jsonb_build_object('from', v_state, 'to', 'closed',
            'reason', 'probes-succeeded', 'atMs', v_now);
          v_state := 'closed';
          v_idx := '{}';
          v_s := '{}';
          v_f := '{}';
          v_admitted := 0;
          v_probe_ok := 0;
          v_half_open := NULL;
          v_half_opened := NULL;
          v_probe_seq := '{}';
          v_probe_at := '{}';
        END IF;
      END IF;
    ELSE
      v_f[v_pos] := v_f[v_pos] + 1;
      v_cf := v_cf + 1;
      IF v_is_probe THEN
        v_reopen := 'probe-failed';
      ELSIF v_state = 'closed' AND coalesce(v_held ->> 'state', '') <> 'closed' THEN
        SELECT coalesce(sum(x), 0) INTO v_successes FROM unnest(v_s) x;
        SELECT coalesce(sum(x), 0) INTO v_failures FROM unnest(v_f) x;
        IF v_cf >= (o ->> 'consecutiveFailures')::bigint THEN
          v_reopen := 'consecutive-failures';
        ELSIF v_successes + v_failures >= (o ->> 'minimumVolume')::bigint
          AND v_failures * 1000000 >= (o ->> 'failureRatePpm')::bigint * (v_successes + v_failures) THEN
          v_reopen := 'failure-rate';
        END IF;
      END IF;
      IF v_reopen IS NOT NULL THEN
        v_transitions := v_transitions || jsonb_build_object('from', v_state, 'to', 'open',
          'reason', v_reopen, 'atMs', v_now);
        v_state := 'open';
        v_opened := v_now;
        v_half_open := v_now + v_cool_down;
        v_half_opened := NULL;
        v_probe_seq := '{}';
        v_probe_at := '{}';
        v_admitted := 0;
        v_probe_ok := 0;
      END IF;
    END IF;
  END IF;

  SELECT coalesce(sum(x), 0) INTO v_successes FROM unnest(v_s) x;
  SELECT coalesce(sum(x), 0) INTO v_failures FROM unnest(v_f) x;

  IF p_op = 'reset' THEN
    DELETE FROM {{schema}}.breakers b WHERE b.prefix = p_prefix AND b.dependency = p_dependency;
  ELSIF v_records OR v_overrides
    OR (p_op = 'acquire' AND (v_probe OR jsonb_array_length(v_transitions) > 0)) THEN
    -- Soft state: the commit need not wait for the disk (a crash may forget the last moment's outcomes).
    PERFORM set_config('synchronous_commit', 'off', true);
    UPDATE {{schema}}.breakers b SET
      state = v_state,
      consecutive_failures = v_cf,
      opened_at_ms = v_opened,
      half_open_at_ms = v_half_open,
      probes_admitted = v_admitted,
      probe_successes = v_probe_ok,
      half_opened_at_ms = v_half_opened,
      probe_seq = v_probe_seq,
      probe_at_ms = v_probe_at,
      options = o,
      bucket_index = v_idx,
      bucket_successes = v_s,
      bucket_failures = v_f,
      override = v_held,
      -- An operator's hold lasts until a reset lifts it; anything else forgets when idle.
      expires_at_ms = CASE WHEN v_held IS NULL THEN v_now + 2 * ((o ->> 'windowMs')::bigint + v_cool_down)
        ELSE 9223372036854775807 END
    WHERE b.prefix = p_prefix AND b.dependency = p_dependency;
  END IF;

  v_view := jsonb_build_object('state', v_state, 'successes', v_successes, 'failures', v_failures,
    'volume', v_successes + v_failures, 'consecutiveFailures', v_cf, 'probesAdmitted', v_admitted,
    'probeSuccesses', v_probe_ok, 'probesInFlight', coalesce(array_length(v_probe_seq, 1), 0),
    'nowMs', v_now);
  IF v_opened IS NOT NULL THEN
    v_view := v_view || jsonb_build_object('openedAtMs', v_opened);
  END IF;
  IF v_state <> 'closed' AND v_half_open IS NOT NULL THEN
    v_view := v_view || jsonb_build_object('halfOpenAtMs', v_half_open);
  END IF;
  IF v_held IS NOT NULL THEN
    v_view := v_view || jsonb_build_object('override', v_held);
  END IF;
  RETURN jsonb_build_object('allowed', v_allowed, 'probe', v_probe, 'transitions', v_transitions,
    'view', v_view, 'options', o) || CASE WHEN v_ticket IS NULL THEN '{}'::jsonb
      ELSE jsonb_build_object('ticket', v_ticket) END;
END
$$;

-- The previous signature, for workers not yet upgraded: no override.
CREATE OR REPLACE FUNCTION {{schema}}.breaker_step(
  p_prefix text, p_dependency text, p_op text, p_options jsonb, p_batched bigint, p_now_ms bigint,
  p_ticket text
) RETURNS jsonb
LANGUAGE sql AS $$
  SELECT {{schema}}.breaker_step(p_prefix, p_dependency, p_op, p_options, p_batched, p_now_ms, p_ticket,
    NULL::jsonb)
$$;
