-- dead_letter_claim(), as 004-dead-letters.sql last defined it. Applied after the migrations whenever
-- this file changes (src/postgres/migrations.ts); {{schema}} is the quoted schema name.

-- Claims a record for replay under p_job_id, or returns the claim an earlier replay left; NULL when the
-- record is gone. Returns { jobId, claimedAt }.
CREATE OR REPLACE FUNCTION {{schema}}.dead_letter_claim(
  p_prefix text, p_queue text, p_id bigint, p_job_id text, p_now_ms bigint
) RETURNS jsonb
LANGUAGE sql AS $$
  UPDATE {{schema}}.dead_letters d
    SET claim_job_id = coalesce(d.claim_job_id, p_job_id),
        claimed_at_ms = coalesce(d.claimed_at_ms, {{schema}}.now_ms(p_now_ms))
    WHERE d.prefix = p_prefix AND d.queue = p_queue AND d.id = p_id
    RETURNING jsonb_build_object('jobId', d.claim_job_id, 'claimedAt', d.claimed_at_ms)
$$;
