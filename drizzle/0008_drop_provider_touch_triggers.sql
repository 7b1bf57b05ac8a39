-- Migration 0004's triggers moved a provider's updated_at on every change of its inventories or
-- traits, for a details key of "generation updated_at". Migration 0006 keyed what allocation
-- candidates keep on inventories.details_version instead, so nothing reads that any more, and each
-- inventory row written rewrote the provider row once more. The API still sets updated_at (with the
-- generation) on every change it makes, as Placement does.
DROP TRIGGER inventories_touch_provider ON inventories;--> statement-breakpoint
DROP TRIGGER resource_provider_traits_touch_provider ON resource_provider_traits;--> statement-breakpoint
DROP FUNCTION resource_providers_touch();
