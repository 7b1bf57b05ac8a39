-- inventories.details_version: when a provider's summary details (its inventories' capacities and
-- its traits) last changed, in microseconds since the epoch, the same on every inventory row a
-- trait change touches and strictly increasing per provider. Flat allocation candidates keep each
-- provider's uuid, capacities and traits between requests under the key "count of its inventory
-- rows, largest details_version" (services/candidates/provider-details.ts), which the filter reads
-- from the rows it aggregates anyway, so it needs no join to resource_providers.
-- - A row inserted, or updated in a column the summary shows or the filter reads, takes a new
--   version: the largest grows. A row deleted lowers the count (a delete and an insert in one
--   change: the insert's version is new). A trait added or removed gives every inventory row of
--   the provider a new version.
-- - A new version is the wall clock, or the provider's largest version + 1 if the clock is behind
--   it (a clock stepped back), so it always grows; after a database is restored to an earlier
--   state, new changes still get versions later than any that were lost.
-- - Changes of inventories.used alone (the allocation triggers) fire none of this: usage is never
--   kept.
-- Locking: the API locks the provider row before it changes inventories or traits, so versions of
-- one provider are computed one change at a time.
CREATE FUNCTION next_details_version(provider integer) RETURNS bigint LANGUAGE sql AS $$
  SELECT greatest((extract(epoch FROM clock_timestamp()) * 1000000)::bigint,
                  (SELECT coalesce(max(details_version), 0) + 1 FROM inventories WHERE resource_provider_id = provider))
$$;--> statement-breakpoint
CREATE FUNCTION inventories_new_details_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.details_version := next_details_version(NEW.resource_provider_id);
  RETURN NEW;
END
$$;--> statement-breakpoint
CREATE TRIGGER inventories_details_version_before_write
  BEFORE INSERT OR UPDATE OF resource_provider_id, resource_class_id, total, reserved, min_unit, max_unit, step_size, allocation_ratio
  ON inventories FOR EACH ROW EXECUTE FUNCTION inventories_new_details_version();--> statement-breakpoint
CREATE FUNCTION resource_provider_traits_new_details_version() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  provider integer := CASE WHEN TG_OP = 'DELETE' THEN OLD.resource_provider_id ELSE NEW.resource_provider_id END;
BEGIN
  UPDATE inventories SET details_version = next_details_version(provider) WHERE resource_provider_id = provider;
  IF TG_OP = 'UPDATE' AND OLD.resource_provider_id <> NEW.resource_provider_id THEN
    UPDATE inventories SET details_version = next_details_version(OLD.resource_provider_id)
    WHERE resource_provider_id = OLD.resource_provider_id;
  END IF;
  RETURN NULL;
END
$$;--> statement-breakpoint
CREATE TRIGGER resource_provider_traits_details_version
  AFTER INSERT OR DELETE OR UPDATE ON resource_provider_traits
  FOR EACH ROW EXECUTE FUNCTION resource_provider_traits_new_details_version();--> statement-breakpoint
UPDATE inventories SET details_version = (extract(epoch FROM clock_timestamp()) * 1000000)::bigint;--> statement-breakpoint
COMMENT ON COLUMN inventories.details_version IS 'When this provider''s inventories or traits last changed (microseconds since the epoch, strictly increasing per provider), set by triggers (inventories_new_details_version, resource_provider_traits_new_details_version). Allocation candidates key what they keep of a provider on its inventory rows'' count and largest version. Never written by the server; do not write it by hand.';--> statement-breakpoint
COMMENT ON FUNCTION next_details_version(integer) IS 'The wall clock in microseconds, or the provider''s largest inventories.details_version + 1 when the clock is behind it: always larger than the provider''s current versions.';
