-- A provider's updated_at moves with every change of its inventories or traits, however it is
-- written. Flat allocation candidates keep each provider's uuid, capacities and traits between
-- requests under the key "generation updated_at" (services/candidates/provider-details.ts). The
-- API bumps both on each such change; these triggers also cover changes made any other way (an
-- operator's SQL, a script), so a kept copy can never outlive what it copies.
-- Changes of inventories.used alone (the allocation triggers) do not fire them: usage is never
-- kept, and claims must not write the provider row a second time.
-- Locking: the API locks the provider row before it changes inventories or traits, so the UPDATE
-- here waits for nothing new.
CREATE FUNCTION resource_providers_touch() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP <> 'INSERT' THEN
    UPDATE resource_providers SET updated_at = now() WHERE id = OLD.resource_provider_id;
  END IF;
  IF TG_OP <> 'DELETE' AND (TG_OP = 'INSERT' OR NEW.resource_provider_id <> OLD.resource_provider_id) THEN
    UPDATE resource_providers SET updated_at = now() WHERE id = NEW.resource_provider_id;
  END IF;
  RETURN NULL;
END
$$;--> statement-breakpoint
CREATE TRIGGER inventories_touch_provider
  AFTER INSERT OR DELETE OR UPDATE OF resource_provider_id, resource_class_id, total, reserved, min_unit, max_unit, step_size, allocation_ratio
  ON inventories FOR EACH ROW EXECUTE FUNCTION resource_providers_touch();--> statement-breakpoint
CREATE TRIGGER resource_provider_traits_touch_provider
  AFTER INSERT OR DELETE OR UPDATE ON resource_provider_traits
  FOR EACH ROW EXECUTE FUNCTION resource_providers_touch();--> statement-breakpoint
COMMENT ON FUNCTION resource_providers_touch() IS 'Trigger (after each row change of inventories, except of used alone, and of resource_provider_traits): sets the provider''s updated_at to now(), so anything keyed by generation and updated_at sees the change even when it was made outside the API.';
