-- The change feed's two helper functions (migration 0010) were SQL functions, which PostgreSQL plans
-- again at every call: provider_changes_note runs in every write's statement triggers (often twice:
-- the inventories' usage and the provider's generation) and provider_changes_state once per changed
-- provider at every commit, so planning them was a large part of an allocation write's time in the
-- database. PL/pgSQL keeps each statement's plan for the session. Same statements, same results.
CREATE OR REPLACE FUNCTION provider_changes_note(ids int[]) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO provider_changes (txid, resource_provider_id, resource_provider_uuid)
  SELECT pg_current_xact_id()::text::bigint, d.id, rp.uuid
  FROM (SELECT DISTINCT unnest(ids) AS id) d LEFT JOIN resource_providers rp ON rp.id = d.id
  ON CONFLICT (txid, resource_provider_id) DO NOTHING;
END
$$;--> statement-breakpoint
CREATE OR REPLACE FUNCTION provider_changes_state(provider int) RETURNS jsonb LANGUAGE plpgsql STABLE AS $$
BEGIN
  RETURN (
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
    WHERE rp.id = provider);
END
$$;
