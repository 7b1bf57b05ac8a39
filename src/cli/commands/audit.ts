/**
 * `placement audit`: what needs an operator's eye, and with --consumers-from
 * and --delete the consumers Nova no longer knows, removed.
 */
import { readFile } from "node:fs/promises";
import { type Command, InvalidArgumentError } from "commander";
import * as audit from "../../services/audit.js";
import type { Store } from "../../services/store.js";
import { confirm } from "../confirm.js";
import type { Cli } from "../context.js";
import { UsageError } from "../exit-codes.js";
import { progress, step } from "../progress.js";

/** After nova-manage placement audit's codes. */
export const AuditExit = { CLEAN: 0, FINDINGS: 3, ALL_ORPHANS_DELETED: 4 } as const;

const UUID = /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/;
const UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400 };

function duration(value: string): number {
  const m = /^(\d+)([smhd]?)$/.exec(value.trim());
  if (!m) throw new InvalidArgumentError("expected a number of seconds, or with a unit: 90m, 12h, 2d");
  return Number(m[1]) * UNITS[m[2] || "s"];
}

interface Options {
  json?: boolean;
  migrationAge: number;
  consumersFrom?: string;
  delete?: boolean;
  yes?: boolean;
}

interface Report {
  over_capacity: audit.OverCapacity[];
  stale_migrations: audit.HeldConsumer[];
  multi_root_consumers: audit.MultiRootConsumer[];
  incomplete_consumers: audit.IncompleteConsumer[];
  providers_without_inventory: audit.ProviderWithoutInventory[];
  /** null without --consumers-from. */
  orphaned_consumers: audit.HeldConsumer[] | null;
  /** null without --delete. */
  deleted: Record<audit.OrphanDeletion, string[]> | null;
}

/** The uuids a Nova database knows, one per line (blank lines and # comments allowed). */
async function knownConsumers(file: string): Promise<string[]> {
  const lines = (await readFile(file, "utf8")).split("\n").map((l) => l.replace(/#.*/, "").trim().toLowerCase());
  const uuids = lines.filter((l) => l.length > 0);
  const bad = uuids.find((u) => !UUID.test(u));
  if (bad !== undefined) throw new UsageError(`${file}: not a uuid: ${bad}`);
  return uuids;
}

function section<T>(title: string, rows: T[] | null, line: (row: T) => string): string {
  if (rows === null) return "";
  if (rows.length === 0) return `${title}: none\n`;
  return `${title} (${rows.length}):\n${rows.map((r) => `  ${line(r)}\n`).join("")}`;
}

function text(r: Report): string {
  const held = (c: audit.HeldConsumer) => `${c.consumer_uuid} ${c.consumer_type ?? "(no type)"} generation ${c.generation}, written ${c.age_seconds}s ago, on ${c.providers.join(", ")}`;
  return [
    section("Providers over capacity", r.over_capacity, (o) => `${o.provider_name} (${o.provider_uuid}) ${o.resource_class}: ${o.used} used of ${o.capacity}`),
    section("MIGRATION consumers older than the age given", r.stale_migrations, held),
    section("Consumers on more than one root provider, not migrations", r.multi_root_consumers, (c) => `${c.consumer_uuid} ${c.consumer_type ?? "(no type)"} on roots ${c.roots.join(", ")}`),
    section("Consumers with the incomplete project or user", r.incomplete_consumers, (c) => `${c.consumer_uuid} project ${c.project_id} user ${c.user_id}`),
    section("Providers without inventory", r.providers_without_inventory, (p) => `${p.provider_name} (${p.provider_uuid})${p.children > 0 ? `, ${p.children} child provider(s)` : ""}`),
    section("Consumers not in the given list (orphaned)", r.orphaned_consumers, held),
    r.deleted
      ? `Deleted ${r.deleted.deleted.length}; left alone because written meanwhile ${r.deleted.changed.length}; already gone ${r.deleted.gone.length}\n`
      : "",
  ].join("");
}

function exitCode(r: Report): number {
  const others =
    r.over_capacity.length + r.stale_migrations.length + r.multi_root_consumers.length + r.incomplete_consumers.length + r.providers_without_inventory.length;
  const orphans = r.orphaned_consumers?.length ?? 0;
  if (others + orphans === 0) return AuditExit.CLEAN;
  if (others === 0 && r.deleted && r.deleted.deleted.length + r.deleted.gone.length === orphans) return AuditExit.ALL_ORPHANS_DELETED;
  return AuditExit.FINDINGS;
}

export function register(program: Command, cli: Cli): void {
  program
    .command("audit")
    .description("Report providers over capacity, leftover and doubled allocations, incomplete consumers, providers without inventory; optionally delete orphaned consumers.")
    .option("--json", "print the findings as JSON")
    .option("--migration-age <age>", "report MIGRATION consumers whose allocations are older than this (seconds, or 90m, 12h, 2d)", duration, 86400)
    .option("--consumers-from <file>", "the instance and migration uuids Nova knows, one per line: report consumers not among them")
    .option("--delete", "delete the orphaned consumers (with --consumers-from), each only if nothing wrote it since it was read")
    .option("--yes", "do not ask before deleting")
    .addHelpText(
      "after",
      "\nExit codes: 0 nothing found, 3 findings reported (or left), 4 every orphaned consumer found was deleted and nothing else was found,\n1 the audit failed, 2 wrong command line.",
    )
    .action(
      cli.action(async (options: Options) => {
        if (options.delete && !options.consumersFrom) throw new UsageError("--delete needs --consumers-from");
        const known = options.consumersFrom ? await knownConsumers(options.consumersFrom).catch(usage) : undefined;
        const settings = cli.settings();
        return cli.withDatabase(async (database) => {
          const db = database.db;
          const report: Report = {
            over_capacity: await step("providers over capacity", () => audit.overCapacity(db)),
            stale_migrations: await step("old MIGRATION consumers", () => audit.staleMigrations(db, options.migrationAge)),
            multi_root_consumers: await step("consumers on several roots", () => audit.multiRootConsumers(db)),
            incomplete_consumers: await step("incomplete consumers", () =>
              audit.incompleteConsumers(db, {
                projectId: settings.PLACEMENT_INCOMPLETE_CONSUMER_PROJECT_ID,
                userId: settings.PLACEMENT_INCOMPLETE_CONSUMER_USER_ID,
              }),
            ),
            providers_without_inventory: await step("providers without inventory", () => audit.providersWithoutInventory(db)),
            orphaned_consumers: known ? await step("orphaned consumers", () => audit.orphanedConsumers(db, known)) : null,
            deleted: null,
          };
          const orphans = report.orphaned_consumers ?? [];
          if (options.delete && orphans.length > 0) {
            const go = options.yes || (await confirm(`Delete ${orphans.length} orphaned consumer(s) and their allocations?`));
            if (go) {
              const store: Store = { db, allocationRetries: settings.PLACEMENT_ALLOCATION_CONFLICT_RETRY_COUNT };
              const deleted: Report["deleted"] = { deleted: [], changed: [], gone: [] };
              const bar = progress("deleting", orphans.length);
              for (const o of orphans) {
                deleted[await audit.deleteConsumerIfUnchanged(store, o.consumer_uuid, o.generation)].push(o.consumer_uuid);
                bar.tick();
              }
              bar.done();
              report.deleted = deleted;
            }
          }
          cli.print(report, options.json, text);
          return exitCode(report);
        });
      }),
    );
}

/** A missing or bad --consumers-from file is the command line's fault: exit 2, not 1. */
function usage(err: unknown): never {
  if (err instanceof UsageError) throw err;
  throw new UsageError(`cannot read --consumers-from: ${(err as Error).message}`);
}
