-- Three trigger functions run in every allocation write: the usage trigger (allocations_keep_inventory_usage),
-- the feed's note (provider_changes_note, from the statement triggers of inventories and providers) and the
-- feed's sequencing at commit (provider_changes_sequence). Their statements take arrays or the transaction's
-- id as parameters. PostgreSQL's plan cache compares the plan it would keep for any value (generic) with
-- the plans it makes for the values at hand (custom); it guesses ten elements for an array it cannot see
-- and many rows for a transaction id, the custom plans looked cheaper every time, and so each of those
-- statements was planned again at every write (pg_stat_statements: as many plans as calls), the
-- sequencing's while holding the feed's lock that orders every commit. Their plans are now kept: the
-- functions run with plan_cache_mode = force_generic_plan, and the two statements whose generic plan
-- would be poor are written so it is not:
-- - the note's provider uuid is looked up by key for each id, not joined (a hash join over a scan of
--   every provider, as the generic plan had it);
-- - the feed's pruning, once in prune_every commits, is planned for its value (EXECUTE), so it keeps
--   using the seq index.
-- Same statements otherwise, same results.
CREATE OR REPLACE FUNCTION provider_changes_note(ids int[]) RETURNS void LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan AS $$
BEGIN
  INSERT INTO provider_changes (txid, resource_provider_id, resource_provider_uuid)
  SELECT pg_current_xact_id()::text::bigint, d.id, (SELECT rp.uuid FROM resource_providers rp WHERE rp.id = d.id)
  FROM (SELECT DISTINCT unnest(ids) AS id) d
  ON CONFLICT (txid, resource_provider_id) DO NOTHING;
END
$$;--> statement-breakpoint
CREATE OR REPLACE FUNCTION provider_changes_sequence() RETURNS trigger LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan AS $$
DECLARE
  me bigint := pg_current_xact_id()::text::bigint;
  s bigint;
  h provider_changes_horizon%ROWTYPE;
BEGIN
  -- Fires once per row of the transaction at commit; the first call sequences them all.
  IF current_setting('placement.provider_changes_sequenced', true) = me::text THEN
    RETURN NULL;
  END IF;
  PERFORM set_config('placement.provider_changes_sequenced', me::text, true);
  PERFORM pg_advisory_xact_lock(hashtext('placement.provider_changes'));
  s := nextval('provider_changes_seq');
  UPDATE provider_changes SET seq = s, state = provider_changes_state(resource_provider_id) WHERE txid = me;
  SELECT * INTO h FROM provider_changes_horizon WHERE id = 1;
  IF s % h.prune_every = 0 AND s - h.retention > h.pruned_through THEN
    EXECUTE 'DELETE FROM provider_changes WHERE seq <= $1' USING s - h.retention;
    UPDATE provider_changes_horizon SET pruned_through = s - h.retention WHERE id = 1;
  END IF;
  PERFORM pg_notify('placement_changes', s::text);
  RETURN NULL;
END
$$;--> statement-breakpoint
ALTER FUNCTION allocations_keep_inventory_usage() SET plan_cache_mode = force_generic_plan;
