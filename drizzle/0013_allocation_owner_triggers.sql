-- allocations.project_id, user_id and consumer_type_id kept equal to their consumer's, by triggers,
-- so no writer (the API, the importer, an operator's SQL) can leave them behind: GET /usages then
-- sums one range of allocations_owner_usage_idx per project (and user) instead of visiting every
-- consumer of the project and, for each, its allocations.
--
-- An allocation takes its consumer's owner as it is written (BEFORE INSERT, or an UPDATE that
-- moves it to another consumer or touches the copies); a consumer whose project, user or type
-- changes passes it on to its allocations. The allocation write upserts its consumers (taking their
-- row locks) before it writes their allocations, so the second trigger locks a consumer's allocation
-- rows after the consumer row, the order in which that write locks them anyway.

-- Writers of allocations wait from here until commit, so the backfill below and the triggers
-- together cover every row. (CREATE TRIGGER takes this lock too.)
LOCK TABLE allocations IN SHARE ROW EXCLUSIVE MODE;--> statement-breakpoint
LOCK TABLE consumers IN SHARE ROW EXCLUSIVE MODE;--> statement-breakpoint
CREATE FUNCTION allocations_copy_consumer_owner() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  SELECT c.project_id, c.user_id, c.consumer_type_id INTO NEW.project_id, NEW.user_id, NEW.consumer_type_id
  FROM consumers c WHERE c.id = NEW.consumer_id;
  RETURN NEW;
END
$$;--> statement-breakpoint
CREATE TRIGGER allocations_consumer_owner BEFORE INSERT OR UPDATE OF consumer_id, project_id, user_id, consumer_type_id ON allocations
  FOR EACH ROW EXECUTE FUNCTION allocations_copy_consumer_owner();--> statement-breakpoint
CREATE FUNCTION consumers_owner_to_allocations() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE allocations SET project_id = NEW.project_id, user_id = NEW.user_id, consumer_type_id = NEW.consumer_type_id
  WHERE consumer_id = NEW.id;
  RETURN NULL;
END
$$;--> statement-breakpoint
CREATE TRIGGER consumers_owner_to_allocations AFTER UPDATE OF project_id, user_id, consumer_type_id ON consumers
  FOR EACH ROW WHEN (OLD.project_id IS DISTINCT FROM NEW.project_id OR OLD.user_id IS DISTINCT FROM NEW.user_id
                     OR OLD.consumer_type_id IS DISTINCT FROM NEW.consumer_type_id)
  EXECUTE FUNCTION consumers_owner_to_allocations();--> statement-breakpoint
UPDATE allocations a SET project_id = c.project_id, user_id = c.user_id, consumer_type_id = c.consumer_type_id
FROM consumers c WHERE c.id = a.consumer_id;--> statement-breakpoint
COMMENT ON COLUMN allocations.project_id IS 'The consumer''s project (consumers.project_id), copied by triggers for GET /usages; never written directly.';--> statement-breakpoint
COMMENT ON COLUMN allocations.user_id IS 'The consumer''s user (consumers.user_id), copied by triggers for GET /usages; never written directly.';--> statement-breakpoint
COMMENT ON COLUMN allocations.consumer_type_id IS 'The consumer''s type (consumers.consumer_type_id), copied by triggers for GET /usages; never written directly.';
