-- A trait change gives every inventory row of its provider a new details_version (migration 0006).
-- That UPDATE locked the rows in plan order, while the allocation triggers lock inventory rows in id
-- order (migration 0003): a trait change and a DELETE of allocations on the same provider could each
-- hold a row the other waits for. Lock the rows in id order first, like every other writer of them.
CREATE OR REPLACE FUNCTION resource_provider_traits_new_details_version() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  provider integer := CASE WHEN TG_OP = 'DELETE' THEN OLD.resource_provider_id ELSE NEW.resource_provider_id END;
BEGIN
  PERFORM 1 FROM inventories WHERE resource_provider_id = provider ORDER BY id FOR UPDATE;
  UPDATE inventories SET details_version = next_details_version(provider) WHERE resource_provider_id = provider;
  IF TG_OP = 'UPDATE' AND OLD.resource_provider_id <> NEW.resource_provider_id THEN
    PERFORM 1 FROM inventories WHERE resource_provider_id = OLD.resource_provider_id ORDER BY id FOR UPDATE;
    UPDATE inventories SET details_version = next_details_version(OLD.resource_provider_id)
    WHERE resource_provider_id = OLD.resource_provider_id;
  END IF;
  RETURN NULL;
END
$$;
