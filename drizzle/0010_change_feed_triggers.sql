-- The change feed (GET /changes, an extension): every committed change to providers, inventories
-- (including their `used`, which follows every allocation), traits and aggregates, as one row per
-- changed provider carrying the provider's state after the transaction, in commit order.
--
-- Why `seq` is commit order: a sequence value taken while a transaction runs is not (a transaction
-- that took 5 can commit after one that took 6, and a reader that saw 6 would skip 5 forever). So
-- the rows are written during the transaction without an order (provider_changes_note, from
-- statement triggers), and the order is given at commit: a deferred constraint trigger, which
-- PostgreSQL runs as the transaction commits, takes a transaction-level advisory lock, takes the
-- next value of provider_changes_seq for the whole transaction, records each changed provider's
-- state and sends a notification. The lock is held until the commit is complete and visible
-- (PostgreSQL releases locks after it marks the transaction committed), so the transaction that
-- takes the next value is always one that starts sequencing after the previous one is visible:
-- seq grows in commit order, and a reader that sees seq S sees every seq below it. The serialised
-- part is only the end of each write (the state query, the notification, the commit itself); the
-- lock is taken after every row lock of the transaction, and sequencing waits for no row lock, so
-- it cannot close a deadlock. The state is read under the lock, so it is the provider's state after
-- every earlier seq and before every later one.
--
-- Retention: every `prune_every`-th seq, the sequencing transaction deletes the rows more than
-- `retention` seqs old and records that in provider_changes_horizon.pruned_through; a reader whose
-- cursor is below it is told to resync (410).
CREATE SEQUENCE provider_changes_seq;--> statement-breakpoint
INSERT INTO provider_changes_horizon (id) VALUES (1);--> statement-breakpoint
CREATE FUNCTION provider_changes_note(ids int[]) RETURNS void LANGUAGE sql AS $$
  INSERT INTO provider_changes (txid, resource_provider_id, resource_provider_uuid)
  SELECT pg_current_xact_id()::text::bigint, d.id, rp.uuid
  FROM (SELECT DISTINCT unnest(ids) AS id) d LEFT JOIN resource_providers rp ON rp.id = d.id
  ON CONFLICT (txid, resource_provider_id) DO NOTHING
$$;--> statement-breakpoint
CREATE FUNCTION provider_changes_from_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    PERFORM provider_changes_note(ARRAY(SELECT resource_provider_id FROM old_rows));
  ELSE
    PERFORM provider_changes_note(ARRAY(SELECT resource_provider_id FROM new_rows));
  END IF;
  RETURN NULL;
END
$$;--> statement-breakpoint
CREATE FUNCTION provider_changes_from_providers() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    -- The provider row is gone by commit: keep its uuid now.
    INSERT INTO provider_changes (txid, resource_provider_id, resource_provider_uuid)
    SELECT pg_current_xact_id()::text::bigint, id, uuid FROM old_rows
    ON CONFLICT (txid, resource_provider_id) DO UPDATE SET resource_provider_uuid = EXCLUDED.resource_provider_uuid;
  ELSE
    PERFORM provider_changes_note(ARRAY(SELECT id FROM new_rows));
  END IF;
  RETURN NULL;
END
$$;--> statement-breakpoint
CREATE FUNCTION provider_changes_state(provider int) RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object(
    'generation', rp.generation,
    'name', rp.name,
    'parent_provider_uuid', parent.uuid,
    'root_provider_uuid', root.uuid,
    'inventories', COALESCE((
      SELECT jsonb_object_agg(rc.name, jsonb_build_object('total', i.total, 'reserved', i.reserved, 'min_unit', i.min_unit,
               'max_unit', i.max_unit, 'step_size', i.step_size, 'allocation_ratio', i.allocation_ratio))
      FROM inventories i JOIN resource_classes rc ON rc.id = i.resource_class_id WHERE i.resource_provider_id = rp.id), '{}'::jsonb),
    'usages', COALESCE((
      SELECT jsonb_object_agg(rc.name, i.used)
      FROM inventories i JOIN resource_classes rc ON rc.id = i.resource_class_id WHERE i.resource_provider_id = rp.id), '{}'::jsonb),
    'traits', COALESCE((
      SELECT jsonb_agg(t.name ORDER BY t.name)
      FROM resource_provider_traits m JOIN traits t ON t.id = m.trait_id WHERE m.resource_provider_id = rp.id), '[]'::jsonb),
    'aggregates', COALESCE((
      SELECT jsonb_agg(a.uuid ORDER BY a.uuid)
      FROM resource_provider_aggregates m JOIN aggregates a ON a.id = m.aggregate_id WHERE m.resource_provider_id = rp.id), '[]'::jsonb))
  FROM resource_providers rp
  LEFT JOIN resource_providers parent ON parent.id = rp.parent_provider_id
  LEFT JOIN resource_providers root ON root.id = rp.root_provider_id
  WHERE rp.id = provider
$$;--> statement-breakpoint
CREATE FUNCTION provider_changes_sequence() RETURNS trigger LANGUAGE plpgsql AS $$
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
    DELETE FROM provider_changes WHERE seq <= s - h.retention;
    UPDATE provider_changes_horizon SET pruned_through = s - h.retention WHERE id = 1;
  END IF;
  PERFORM pg_notify('placement_changes', s::text);
  RETURN NULL;
END
$$;--> statement-breakpoint
CREATE CONSTRAINT TRIGGER provider_changes_sequence AFTER INSERT ON provider_changes
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION provider_changes_sequence();--> statement-breakpoint
CREATE TRIGGER resource_providers_changes_insert AFTER INSERT ON resource_providers
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION provider_changes_from_providers();--> statement-breakpoint
CREATE TRIGGER resource_providers_changes_update AFTER UPDATE ON resource_providers
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION provider_changes_from_providers();--> statement-breakpoint
CREATE TRIGGER resource_providers_changes_delete AFTER DELETE ON resource_providers
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION provider_changes_from_providers();--> statement-breakpoint
CREATE TRIGGER inventories_changes_insert AFTER INSERT ON inventories
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION provider_changes_from_rows();--> statement-breakpoint
CREATE TRIGGER inventories_changes_update AFTER UPDATE ON inventories
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION provider_changes_from_rows();--> statement-breakpoint
CREATE TRIGGER inventories_changes_delete AFTER DELETE ON inventories
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION provider_changes_from_rows();--> statement-breakpoint
CREATE TRIGGER resource_provider_traits_changes_insert AFTER INSERT ON resource_provider_traits
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION provider_changes_from_rows();--> statement-breakpoint
CREATE TRIGGER resource_provider_traits_changes_delete AFTER DELETE ON resource_provider_traits
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION provider_changes_from_rows();--> statement-breakpoint
CREATE TRIGGER resource_provider_aggregates_changes_insert AFTER INSERT ON resource_provider_aggregates
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION provider_changes_from_rows();--> statement-breakpoint
CREATE TRIGGER resource_provider_aggregates_changes_delete AFTER DELETE ON resource_provider_aggregates
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION provider_changes_from_rows();--> statement-breakpoint
COMMENT ON TABLE provider_changes IS 'The change feed (GET /changes): one row per provider changed by a committed transaction, in commit order by seq, with the provider''s state after it (state NULL: deleted). Written only by triggers; rows older than provider_changes_horizon.retention seqs are deleted.';--> statement-breakpoint
COMMENT ON COLUMN provider_changes.seq IS 'Commit order: given at commit under an advisory lock (provider_changes_sequence), so a reader that sees a seq sees every lower one. NULL only inside the writing transaction.';--> statement-breakpoint
COMMENT ON TABLE provider_changes_horizon IS 'One row: how many seqs the change feed keeps (retention), how often it prunes (prune_every seqs), and the highest seq pruned (cursors below it must resync).';--> statement-breakpoint
COMMENT ON FUNCTION provider_changes_sequence() IS 'Deferred trigger (at commit, once per transaction): gives the transaction''s provider_changes rows the next seq and each provider''s state, under an advisory lock held until the commit is visible, then notifies placement_changes.';
