-- budget_apply(), as 003-budget.sql last defined it. Applied after the migrations whenever
-- this file changes (src/postgres/migrations.ts); {{schema}} is the quoted schema name.

-- One dependency's budget, computed: loads the row (locked when p_write), applies the caller's settings
-- (window.ts: promote a due change, then let a higher version start one), adds the aged successes
-- (p_ages[i] ms before now, p_counts[i] of them), decides p_count retries and records them in every ring,
-- and stores the row (when p_write). Both rings live in the same local arrays, ring n at slot offset
-- v_off[n], so one loop serves both.
--
-- Returns NULL when reading a dependency the store holds nothing for; { problem } when reading a row that
-- cannot be read; else { granted, allowance, spent, denied, successes, window, pending?, reset? }.
CREATE OR REPLACE FUNCTION {{schema}}.budget_apply(
  p_prefix text, p_dependency text, p_write boolean,
  p_bucket_ms bigint, p_buckets bigint, p_ratio_ppm bigint, p_min_allowance bigint, p_version bigint,
  p_count bigint, p_ages bigint[], p_counts bigint[], p_now_ms bigint
) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  c_max CONSTANT bigint := 9007199254740991;
  v_now bigint := {{schema}}.now_ms(p_now_ms);
  b {{schema}}.budgets%ROWTYPE;
  v_problem text;
  v_rings int;
  -- Per ring n: settings, newest bucket, slot offset, current bucket.
  v_bms bigint[];
  v_bk bigint[];
  v_ratio bigint[];
  v_min bigint[];
  v_ver bigint[];
  v_last bigint[];
  v_off int[];
  v_cur bigint[] := '{}';
  -- The slots of every ring, one after another.
  v_idx bigint[];
  v_s bigint[];
  v_g bigint[];
  v_d bigint[];
  v_start bigint;
  v_due boolean;
  v_bucket bigint;
  v_i int;
  v_age bigint;
  v_sum_s bigint;
  v_sum_g bigint;
  v_sum_d bigint;
  v_old_s bigint;
  v_old_d bigint;
  v_overlap bigint;
  v_allowance bigint;
  v_room bigint := c_max;
  v_gs bigint;
  v_gg bigint;
  v_gd bigint;
  v_ga bigint;
  v_granted bigint := 0;
  v_reply jsonb;
BEGIN
  IF p_write THEN
    IF p_count IS NULL OR p_count < 0
      OR NOT coalesce(p_bucket_ms BETWEEN 1 AND 86400000 AND p_buckets BETWEEN 1 AND 1000
        AND p_ratio_ppm BETWEEN 0 AND 1000000 AND p_min_allowance BETWEEN 0 AND c_max
        AND p_version BETWEEN 0 AND c_max, false)
      OR coalesce(array_length(p_ages, 1), 0) <> coalesce(array_length(p_counts, 1), 0) THEN
      RAISE EXCEPTION 'stormguard-budget: bad arguments' USING ERRCODE = '22023';
    END IF;
    -- Soft state: the commit need not wait for the disk (see the store's doc comment).
    PERFORM set_config('synchronous_commit', 'off', true);
    SELECT * INTO b FROM {{schema}}.budgets t
      WHERE t.prefix = p_prefix AND t.dependency = p_dependency FOR UPDATE;
    IF NOT FOUND THEN
      -- A placeholder that reads as absent (expired) until this call writes it.
      INSERT INTO {{schema}}.budgets AS t (prefix, dependency, g_bucket_ms, g_buckets, g_ratio_ppm,
          g_min_allowance, g_version, g_last, g_idx, g_successes, g_spent, g_denied, expires_at_ms)
        VALUES (p_prefix, p_dependency, 1, 1, 0, 0, 0, -1, '{-1,-1}', '{0,0}', '{0,0}', '{0,0}', 0)
        ON CONFLICT (prefix, dependency) DO NOTHING;
      SELECT * INTO b FROM {{schema}}.budgets t
        WHERE t.prefix = p_prefix AND t.dependency = p_dependency FOR UPDATE;
    END IF;
  ELSE
    SELECT * INTO b FROM {{schema}}.budgets t WHERE t.prefix = p_prefix AND t.dependency = p_dependency;
    IF NOT FOUND OR b.expires_at_ms <= v_now THEN
      RETURN NULL;
    END IF;
  END IF;

  -- What is wrong with a live row (the columns enforce the shape, this the ranges); such a row affects
  -- its own dependency only: a write replaces it, a read reports it.
  IF b.expires_at_ms > v_now THEN
    IF NOT coalesce(b.g_bucket_ms BETWEEN 1 AND 86400000 AND b.g_buckets BETWEEN 1 AND 1000
        AND b.g_ratio_ppm BETWEEN 0 AND 1000000 AND b.g_min_allowance BETWEEN 0 AND c_max
        AND b.g_version BETWEEN 0 AND c_max AND b.g_last BETWEEN -1 AND c_max
        AND array_length(b.g_idx, 1) = b.g_buckets + 1 AND array_length(b.g_successes, 1) = b.g_buckets + 1
        AND array_length(b.g_spent, 1) = b.g_buckets + 1 AND array_length(b.g_denied, 1) = b.g_buckets + 1
        AND -1 <= ALL (b.g_idx) AND c_max >= ALL (b.g_idx)
        AND 0 <= ALL (b.g_successes) AND c_max >= ALL (b.g_successes)
        AND 0 <= ALL (b.g_spent) AND c_max >= ALL (b.g_spent)
        AND 0 <= ALL (b.g_denied) AND c_max >= ALL (b.g_denied), false) THEN
      v_problem := 'malformed settings or counts';
    ELSIF b.p_bucket_ms IS NOT NULL AND NOT coalesce(b.p_bucket_ms BETWEEN 1 AND 86400000
        AND b.p_buckets BETWEEN 1 AND 1000 AND b.p_ratio_ppm BETWEEN 0 AND 1000000
        AND b.p_min_allowance BETWEEN 0 AND c_max AND b.p_version BETWEEN 0 AND c_max
        AND b.p_last BETWEEN -1 AND c_max AND b.p_start BETWEEN -1 AND c_max
        AND array_length(b.p_idx, 1) = b.p_buckets + 1 AND array_length(b.p_successes, 1) = b.p_buckets + 1
        AND array_length(b.p_spent, 1) = b.p_buckets + 1 AND array_length(b.p_denied, 1) = b.p_buckets + 1
        AND -1 <= ALL (b.p_idx) AND c_max >= ALL (b.p_idx)
        AND 0 <= ALL (b.p_successes) AND c_max >= ALL (b.p_successes)
        AND 0 <= ALL (b.p_spent) AND c_max >= ALL (b.p_spent)
        AND 0 <= ALL (b.p_denied) AND c_max >= ALL (b.p_denied), false) THEN
      v_problem := 'malformed pending settings';
    END IF;
    IF v_problem IS NOT NULL AND NOT p_write THEN
      RETURN jsonb_build_object('problem', v_problem);
    END IF;
  END IF;

  IF b.expires_at_ms <= v_now OR v_problem IS NOT NULL THEN
    -- Fresh state with the caller's settings.
    v_rings := 1;
    v_bms := ARRAY[p_bucket_ms];
    v_bk := ARRAY[p_buckets];
    v_ratio := ARRAY[p_ratio_ppm];
    v_min := ARRAY[p_min_allowance];
    v_ver := ARRAY[p_version];
    v_last := ARRAY[-1::bigint];
    v_off := ARRAY[0];
    v_idx := array_fill(-1::bigint, ARRAY[(p_buckets + 1)::int]);
    v_s := array_fill(0::bigint, ARRAY[(p_buckets + 1)::int]);
    v_g := v_s;
    v_d := v_s;
  ELSE
    v_rings := 1;
    v_bms := ARRAY[b.g_bucket_ms];
    v_bk := ARRAY[b.g_buckets];
    v_ratio := ARRAY[b.g_ratio_ppm];
    v_min := ARRAY[b.g_min_allowance];
    v_ver := ARRAY[b.g_version];
    v_last := ARRAY[b.g_last];
    v_off := ARRAY[0];
    v_idx := b.g_idx;
    v_s := b.g_successes;
    v_g := b.g_spent;
    v_d := b.g_denied;
    IF b.p_bucket_ms IS NOT NULL THEN
      -- Due: the pending settings' ring holds a whole window of its own.
      v_due := greatest(b.p_last, div(v_now, b.p_bucket_ms)) - b.p_start >= b.p_buckets + 1;
      IF v_due THEN
        v_bms := ARRAY[b.p_bucket_ms];
        v_bk := ARRAY[b.p_buckets];
        v_ratio := ARRAY[b.p_ratio_ppm];
        v_min := ARRAY[b.p_min_allowance];
        v_ver := ARRAY[b.p_version];
        v_last := ARRAY[b.p_last];
        v_idx := b.p_idx;
        v_s := b.p_successes;
        v_g := b.p_spent;
        v_d := b.p_denied;
      ELSE
        v_rings := 2;
        v_bms := v_bms || b.p_bucket_ms;
        v_bk := v_bk || b.p_buckets;
        v_ratio := v_ratio || b.p_ratio_ppm;
        v_min := v_min || b.p_min_allowance;
        v_ver := v_ver || b.p_version;
        v_last := v_last || b.p_last;
        v_off := v_off || (b.g_buckets + 1)::int;
        v_idx := v_idx || b.p_idx;
        v_s := v_s || b.p_successes;
        v_g := v_g || b.p_spent;
        v_d := v_d || b.p_denied;
        v_start := b.p_start;
      END IF;
    END IF;
  END IF;

  -- A caller with a higher version than the governing (and the pending) settings starts a change.
  IF p_write AND (p_bucket_ms, p_buckets, p_ratio_ppm, p_min_allowance, p_version)
      IS DISTINCT FROM (v_bms[1], v_bk[1], v_ratio[1], v_min[1], v_ver[1])
    AND p_version > v_ver[1] AND (v_rings = 1 OR p_version > v_ver[2]) THEN
    v_rings := 2;
    v_bms := v_bms[1:1] || p_bucket_ms;
    v_bk := v_bk[1:1] || p_buckets;
    v_ratio := v_ratio[1:1] || p_ratio_ppm;
    v_min := v_min[1:1] || p_min_allowance;
    v_ver := v_ver[1:1] || p_version;
    v_last := v_last[1:1] || -1::bigint;
    v_off := ARRAY[0, (v_bk[1] + 1)::int];
    v_idx := v_idx[1:v_bk[1] + 1] || array_fill(-1::bigint, ARRAY[(p_buckets + 1)::int]);
    v_s := v_s[1:v_bk[1] + 1] || array_fill(0::bigint, ARRAY[(p_buckets + 1)::int]);
    v_g := v_g[1:v_bk[1] + 1] || array_fill(0::bigint, ARRAY[(p_buckets + 1)::int]);
    v_d := v_d[1:v_bk[1] + 1] || array_fill(0::bigint, ARRAY[(p_buckets + 1)::int]);
    v_start := div(v_now, p_bucket_ms);
  END IF;

  FOR n IN 1 .. v_rings LOOP
    v_cur[n] := greatest(v_last[n], div(v_now, v_bms[n]));
    IF p_write THEN
      v_last[n] := v_cur[n];
      -- Aged successes: stamped now - age; dropped when older than the oldest bucket the ring keeps.
      FOR j IN 1 .. coalesce(array_length(p_ages, 1), 0) LOOP
        v_bucket := least(v_cur[n], div(greatest(0, v_now - p_ages[j]), v_bms[n]));
        IF v_cur[n] - v_bucket <= v_bk[n] THEN
          v_i := v_off[n] + (v_bucket % (v_bk[n] + 1))::int + 1;
          IF v_idx[v_i] <> v_bucket THEN
            v_idx[v_i] := v_bucket;
            v_s[v_i] := 0;
            v_g[v_i] := 0;
            v_d[v_i] := 0;
          END IF;
          v_s[v_i] := least(v_s[v_i] + p_counts[j], c_max);
        END IF;
      END LOOP;
    END IF;
    -- The window's sums: successes and denials of the newest `buckets` buckets plus the oldest weighted
    -- by its overlap (rounded down); spend of all buckets + 1, the oldest counted whole.
    v_sum_s := 0;
    v_sum_g := 0;
    v_sum_d := 0;
    v_old_s := 0;
    v_old_d := 0;
    FOR k IN v_off[n] + 1 .. v_off[n] + v_bk[n] + 1 LOOP
      v_age := v_cur[n] - v_idx[k];
      IF v_idx[k] >= 0 AND v_age >= 0 AND v_age <= v_bk[n] THEN
        v_sum_g := least(v_sum_g + v_g[k], c_max);
        IF v_age < v_bk[n] THEN
          v_sum_s := least(v_sum_s + v_s[k], c_max);
          v_sum_d := least(v_sum_d + v_d[k], c_max);
        ELSE
          v_old_s := v_s[k];
          v_old_d := v_d[k];
        END IF;
      END IF;
    END LOOP;
    -- An earlier time than the newest bucket counts as that bucket's start: the oldest bucket counts whole.
    v_overlap := CASE WHEN v_cur[n] > div(v_now, v_bms[n]) THEN v_bms[n] ELSE v_bms[n] - v_now % v_bms[n] END;
    v_sum_s := least(v_sum_s + floor(v_old_s::numeric * v_overlap / v_bms[n])::bigint, c_max);
    v_sum_d := least(v_sum_d + floor(v_old_d::numeric * v_overlap / v_bms[n])::bigint, c_max);
    v_allowance := greatest(floor(v_sum_s::numeric * v_ratio[n] / 1000000)::bigint, v_min[n]);
    v_room := least(v_room, greatest(0, v_allowance - v_sum_g));
    IF n = 1 THEN
      v_gs := v_sum_s;
      v_gg := v_sum_g;
      v_gd := v_sum_d;
      v_ga := v_allowance;
    END IF;
  END LOOP;

  IF p_write THEN
    v_granted := least(p_count, v_room);
    FOR n IN 1 .. v_rings LOOP
      v_i := v_off[n] + (v_cur[n] % (v_bk[n] + 1))::int + 1;
      IF v_idx[v_i] <> v_cur[n] THEN
        v_idx[v_i] := v_cur[n];
        v_s[v_i] := 0;
        v_g[v_i] := 0;
        v_d[v_i] := 0;
      END IF;
      v_g[v_i] := least(v_g[v_i] + v_granted, c_max);
      v_d[v_i] := least(v_d[v_i] + p_count - v_granted, c_max);
    END LOOP;
    UPDATE {{schema}}.budgets t SET
      g_bucket_ms = v_bms[1], g_buckets = v_bk[1], g_ratio_ppm = v_ratio[1],
      g_min_allowance = v_min[1], g_version = v_ver[1], g_last = v_last[1],
      g_idx = v_idx[1:v_bk[1] + 1], g_successes = v_s[1:v_bk[1] + 1],
      g_spent = v_g[1:v_bk[1] + 1], g_denied = v_d[1:v_bk[1] + 1],
      p_bucket_ms = v_bms[2], p_buckets = v_bk[2], p_ratio_ppm = v_ratio[2],
      p_min_allowance = v_min[2], p_version = v_ver[2], p_last = v_last[2],
      p_idx = CASE WHEN v_rings = 2 THEN v_idx[v_off[2] + 1:] END,
      p_successes = CASE WHEN v_rings = 2 THEN v_s[v_off[2] + 1:] END,
      p_spent = CASE WHEN v_rings = 2 THEN v_g[v_off[2] + 1:] END,
      p_denied = CASE WHEN v_rings = 2 THEN v_d[v_off[2] + 1:] END,
      p_start = CASE WHEN v_rings = 2 THEN v_start END,
      expires_at_ms = v_now + 2 * greatest(v_bms[1] * v_bk[1], coalesce(v_bms[2] * v_bk[2], 0))
    WHERE t.prefix = p_prefix AND t.dependency = p_dependency;
  END IF;

  v_reply := jsonb_build_object('allowance', least(v_ga, v_gg + v_room),
    'spent', least(v_gg + v_granted, c_max), 'denied', least(v_gd + p_count - v_granted, c_max),
    'successes', v_gs,
    'window', jsonb_build_object('bucketMs', v_bms[1], 'buckets', v_bk[1], 'windowMs', v_bms[1] * v_bk[1],
      'ratioPpm', v_ratio[1], 'minAllowance', v_min[1], 'version', v_ver[1]));
  IF p_write THEN
    v_reply := v_reply || jsonb_build_object('granted', v_granted);
  END IF;
  IF v_rings = 2 THEN
    v_reply := v_reply || jsonb_build_object('pending', jsonb_build_object('bucketMs', v_bms[2],
      'buckets', v_bk[2], 'windowMs', v_bms[2] * v_bk[2], 'ratioPpm', v_ratio[2],
      'minAllowance', v_min[2], 'version', v_ver[2]));
  END IF;
  IF v_problem IS NOT NULL THEN
    v_reply := v_reply || jsonb_build_object('reset', v_problem);
  END IF;
  RETURN v_reply;
END
$$;
