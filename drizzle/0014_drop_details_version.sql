-- Migrations 0005 to 0007 gave every inventory row a details_version that moved whenever its
-- provider's inventories or traits changed, for allocation candidates to key what they kept of each
-- provider on. Candidates of a flat cloud now follow the change feed (migration 0010) into a copy kept
-- in memory, so nothing reads the version any more, and each trait written had rewritten every
-- inventory row of its provider.
DROP TRIGGER inventories_details_version_before_write ON inventories;--> statement-breakpoint
DROP TRIGGER resource_provider_traits_details_version ON resource_provider_traits;--> statement-breakpoint
DROP FUNCTION inventories_new_details_version();--> statement-breakpoint
DROP FUNCTION resource_provider_traits_new_details_version();--> statement-breakpoint
DROP FUNCTION next_details_version(integer);--> statement-breakpoint
ALTER TABLE "inventories" DROP COLUMN "details_version";
