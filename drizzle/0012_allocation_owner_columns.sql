ALTER TABLE "allocations" ADD COLUMN "project_id" integer;--> statement-breakpoint
ALTER TABLE "allocations" ADD COLUMN "user_id" integer;--> statement-breakpoint
ALTER TABLE "allocations" ADD COLUMN "consumer_type_id" integer;--> statement-breakpoint
CREATE INDEX "allocations_owner_usage_idx" ON "allocations" USING btree ("project_id","user_id","consumer_type_id","resource_class_id","consumer_id","used");