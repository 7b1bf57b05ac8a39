-- The change feed's sequencing (migration 0010) read each changed provider's state under the feed's
-- advisory lock, which a writing transaction holds from then until its commit is visible. The lock
-- serialises the end of every write, so whatever runs under it bounds how many writes commit per
-- second, and on a loaded machine a holder waiting for a core holds back every writer queued behind it.
-- The states are now read before the lock, in one snapshot together with the highest seq that snapshot
-- sees (seen). A transaction that changed one of the same providers and committed after that snapshot
-- has a seq above seen (seq is commit order: one sequenced below seen committed before seen's
-- transaction did, so that snapshot saw it), so under the lock one look at the seq index tells whether
-- the states are still those after every earlier seq; only when they are not are they read again there.
-- Each state is the provider's state after every earlier seq and before every later one, as before,
-- while under the lock run only that look, the seq and one update of the transaction's rows.
CREATE OR REPLACE FUNCTION provider_changes_sequence() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  me bigint := pg_current_xact_id()::text::bigint;
  s bigint;
  seen bigint;
  ids int[];
  states jsonb[];
  h provider_changes_horizon%ROWTYPE;
BEGIN
  -- Fires once per row of the transaction at commit; the first call sequences them all.
  IF current_setting('placement.provider_changes_sequenced', true) = me::text THEN
    RETURN NULL;
  END IF;
  PERFORM set_config('placement.provider_changes_sequenced', me::text, true);
  SELECT array_agg(c.resource_provider_id ORDER BY c.resource_provider_id),
         array_agg(provider_changes_state(c.resource_provider_id) ORDER BY c.resource_provider_id),
         (SELECT coalesce(max(p.seq), 0) FROM provider_changes p)
    INTO ids, states, seen
    FROM provider_changes c WHERE c.txid = me;
  PERFORM pg_advisory_xact_lock(hashtext('placement.provider_changes'));
  IF EXISTS (SELECT FROM provider_changes c WHERE c.seq > seen AND c.resource_provider_id = ANY(ids)) THEN
    SELECT array_agg(provider_changes_state(x.id) ORDER BY x.n) INTO states FROM unnest(ids) WITH ORDINALITY AS x(id, n);
  END IF;
  s := nextval('provider_changes_seq');
  UPDATE provider_changes c SET seq = s, state = x.state
    FROM unnest(ids, states) AS x(id, state)
    WHERE c.txid = me AND c.resource_provider_id = x.id;
  SELECT * INTO h FROM provider_changes_horizon WHERE id = 1;
  IF s % h.prune_every = 0 AND s - h.retention > h.pruned_through THEN
    DELETE FROM provider_changes WHERE seq <= s - h.retention;
    UPDATE provider_changes_horizon SET pruned_through = s - h.retention WHERE id = 1;
  END IF;
  PERFORM pg_notify('placement_changes', s::text);
  RETURN NULL;
END
$$;
