CREATE TABLE "provider_changes" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "provider_changes_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"txid" bigint NOT NULL,
	"seq" bigint,
	"resource_provider_id" integer NOT NULL,
	"resource_provider_uuid" varchar(36),
	"state" jsonb,
	CONSTRAINT "provider_changes_txid_provider_unique" UNIQUE("txid","resource_provider_id")
);
--> statement-breakpoint
CREATE TABLE "provider_changes_horizon" (
	"id" integer PRIMARY KEY DEFAULT 1 NOT NULL,
	"pruned_through" bigint DEFAULT 0 NOT NULL,
	"retention" bigint DEFAULT 100000 NOT NULL,
	"prune_every" integer DEFAULT 1000 NOT NULL,
	CONSTRAINT "provider_changes_horizon_one_row" CHECK ("provider_changes_horizon"."id" = 1),
	CONSTRAINT "provider_changes_horizon_retention_positive" CHECK ("provider_changes_horizon"."retention" >= 1),
	CONSTRAINT "provider_changes_horizon_prune_every_positive" CHECK ("provider_changes_horizon"."prune_every" >= 1)
);
--> statement-breakpoint
CREATE INDEX "provider_changes_seq_idx" ON "provider_changes" USING btree ("seq");