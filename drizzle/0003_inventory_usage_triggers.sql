-- inventories.used kept equal to the sum of allocations.used for the same provider and class by
-- triggers, in the transaction that changes allocations or creates inventory, so no code path can
-- forget it; reads of usage (allocation candidates, usages) take it from the inventory row instead
-- of summing allocations.
--
-- Locking: the allocation triggers lock the inventory rows they change, all at once and in id
-- order, before changing them, so two writers wait for each other instead of deadlocking. Writers
-- that change allocations in more than one statement lock those rows up front in the same way
-- (services/allocations.ts).
--
-- Allocations for a provider and class without an inventory row change nothing here: Placement
-- never commits that state, but the reshaper passes through it inside one transaction; the
-- inventory row created later counts them when it is inserted.

-- Writers of allocations (an older server still running, say) wait from here until commit, so the
-- backfill below counts exactly what the triggers do not. (CREATE TRIGGER takes this lock too.)
LOCK TABLE allocations IN SHARE ROW EXCLUSIVE MODE;--> statement-breakpoint
CREATE FUNCTION allocations_keep_inventory_usage() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  providers int[];
  classes int[];
  deltas bigint[];
BEGIN
  -- The statement's net change per provider and class: inserted rows count up, deleted rows down.
  IF TG_OP = 'INSERT' THEN
    SELECT array_agg(resource_provider_id), array_agg(resource_class_id), array_agg(delta) INTO providers, classes, deltas
    FROM (SELECT resource_provider_id, resource_class_id, sum(used) AS delta FROM new_rows GROUP BY 1, 2) d;
  ELSIF TG_OP = 'DELETE' THEN
    SELECT array_agg(resource_provider_id), array_agg(resource_class_id), array_agg(delta) INTO providers, classes, deltas
    FROM (SELECT resource_provider_id, resource_class_id, -sum(used) AS delta FROM old_rows GROUP BY 1, 2) d;
  ELSE
    SELECT array_agg(resource_provider_id), array_agg(resource_class_id), array_agg(delta) INTO providers, classes, deltas
    FROM (SELECT resource_provider_id, resource_class_id, sum(used) AS delta
          FROM (SELECT resource_provider_id, resource_class_id, used FROM new_rows
                UNION ALL
                SELECT resource_provider_id, resource_class_id, -used FROM old_rows) r
          GROUP BY 1, 2 HAVING sum(used) <> 0) d;
  END IF;
  IF providers IS NULL THEN
    RETURN NULL;
  END IF;
  -- Lock every row to change in id order first: the UPDATE alone would lock them in plan order,
  -- and two statements locking overlapping rows in different orders can deadlock.
  PERFORM 1 FROM inventories i JOIN unnest(providers, classes) AS d(rp, rc)
    ON i.resource_provider_id = d.rp AND i.resource_class_id = d.rc
  ORDER BY i.id FOR UPDATE OF i;
  UPDATE inventories i SET used = i.used + d.delta
  FROM unnest(providers, classes, deltas) AS d(rp, rc, delta)
  WHERE i.resource_provider_id = d.rp AND i.resource_class_id = d.rc;
  RETURN NULL;
END
$$;--> statement-breakpoint
CREATE TRIGGER allocations_usage_after_insert AFTER INSERT ON allocations
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION allocations_keep_inventory_usage();--> statement-breakpoint
CREATE TRIGGER allocations_usage_after_update AFTER UPDATE ON allocations
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION allocations_keep_inventory_usage();--> statement-breakpoint
CREATE TRIGGER allocations_usage_after_delete AFTER DELETE ON allocations
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION allocations_keep_inventory_usage();--> statement-breakpoint
CREATE FUNCTION allocations_clear_inventory_usage() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE inventories SET used = 0 WHERE used <> 0;
  RETURN NULL;
END
$$;--> statement-breakpoint
CREATE TRIGGER allocations_usage_after_truncate AFTER TRUNCATE ON allocations
  FOR EACH STATEMENT EXECUTE FUNCTION allocations_clear_inventory_usage();--> statement-breakpoint
CREATE FUNCTION inventories_count_existing_usage() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.used := (SELECT coalesce(sum(a.used), 0) FROM allocations a
               WHERE a.resource_provider_id = NEW.resource_provider_id AND a.resource_class_id = NEW.resource_class_id);
  RETURN NEW;
END
$$;--> statement-breakpoint
CREATE TRIGGER inventories_usage_before_insert BEFORE INSERT ON inventories
  FOR EACH ROW EXECUTE FUNCTION inventories_count_existing_usage();--> statement-breakpoint
UPDATE inventories i SET used = u.used
FROM (SELECT resource_provider_id, resource_class_id, sum(used) AS used FROM allocations GROUP BY 1, 2) u
WHERE u.resource_provider_id = i.resource_provider_id AND u.resource_class_id = i.resource_class_id;--> statement-breakpoint
COMMENT ON COLUMN inventories.used IS 'Units allocated from this inventory: always the sum of allocations.used for this provider and class, kept by triggers in the same transaction as every change to allocations (allocations_keep_inventory_usage) and set when the row is created (inventories_count_existing_usage). Never written by the server; do not write it by hand.';--> statement-breakpoint
COMMENT ON FUNCTION allocations_keep_inventory_usage() IS 'Trigger (after each INSERT, UPDATE, DELETE statement on allocations): adds the statement''s net change per provider and class to inventories.used, locking those inventory rows in id order first.';--> statement-breakpoint
COMMENT ON FUNCTION allocations_clear_inventory_usage() IS 'Trigger (after TRUNCATE of allocations): sets every inventories.used to 0.';--> statement-breakpoint
COMMENT ON FUNCTION inventories_count_existing_usage() IS 'Trigger (before INSERT on inventories): starts used at what the provider''s allocations of that class already hold, so an inventory deleted and created again (reshaper, PUT inventories) is right from the start.';
