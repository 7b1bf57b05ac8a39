/**
 * The checks of `placement status`, as `placement-status upgrade check`
 * runs them: each has a name, a result (Success, Warning, Failure) and
 * details; the worst result is the exit code (0, 1, 2). A check that needs
 * what an earlier one found missing is a Failure saying so, not an error.
 */
import { sql } from "drizzle-orm";
import { createPolicyEnforcer } from "../auth/policy.js";
import type { Config } from "../config.js";
import { NO_LIMITS, type Database } from "../db/database.js";
import { ReadReplicas } from "../db/read-replicas.js";
import { createLogger } from "../log.js";
import { schemaVersion } from "../db/migrate.js";
import { rootCause } from "../root-cause.js";
import { incompleteConsumers, overCapacity } from "./audit.js";

export type CheckResult = "Success" | "Warning" | "Failure";

export interface Check {
  name: string;
  result: CheckResult;
  details: string | null;
}

export const CHECK_EXIT_CODE: Record<CheckResult, number> = { Success: 0, Warning: 1, Failure: 2 };

/** The checks that read data: listed as not checked when the database or its schema cannot be read. */
const DATA_CHECKS = ["Incomplete consumers", "Providers over capacity"];

function policyCheck(config: Config): Check {
  const name = "Policy file";
  const file = config.PLACEMENT_POLICY_FILE;
  if (!file) return { name, result: "Success", details: "no policy file: Placement's defaults apply" };
  try {
    createPolicyEnforcer(config);
  } catch (err) {
    return { name, result: "Failure", details: (err as Error).message };
  }
  if (file.endsWith(".json")) {
    return { name, result: "Warning", details: `${file} is JSON, which oslo.policy deprecated: convert it to YAML` };
  }
  return { name, result: "Success", details: `${file} is valid` };
}

/**
 * PLACEMENT_READ_DATABASE_URL's standbys, measured once as the server measures
 * them (db/read-replicas.ts): a Warning names each that the server would skip.
 */
async function readReplicasCheck(database: Database, config: Config, primaryUrl: string, replicaUrls: string[]): Promise<Check> {
  const maxLagSeconds = config.PLACEMENT_READ_MAX_LAG_SECONDS;
  const options = { primaryUrl, replicaUrls, maxLagSeconds, poolSize: 1, limits: NO_LIMITS, log: createLogger("silent") };
  const replicas = await ReadReplicas.open(database.db, options, false);
  try {
    const states = replicas.states();
    const each = states.map((s) => {
      const behind = s.behindSeconds === null ? "" : `, ${s.behindSeconds.toFixed(1)} s behind`;
      return `${s.name} ${s.usable ? "serves reads" : "skipped"} (${s.detail}${behind})`;
    });
    const skipped = states.some((s) => !s.usable);
    const details = `${each.join("; ")}${skipped ? `; reads it would serve go to the primary (bound: ${maxLagSeconds} s)` : ""}`;
    return { name: "Read replicas", result: skipped ? "Warning" : "Success", details };
  } finally {
    await replicas.close();
  }
}

export async function upgradeChecks(database: Database, config: Config, url: string): Promise<Check[]> {
  const checks: Check[] = [];
  const notChecked = (why: string) => DATA_CHECKS.map((name): Check => ({ name, result: "Failure", details: `not checked: ${why}` }));
  try {
    await database.db.execute(sql`SELECT 1`);
    checks.push({ name: "Database", result: "Success", details: "reachable" });
  } catch (err) {
    const cause = rootCause(err);
    checks.push({ name: "Database", result: "Failure", details: `unreachable: ${cause.message}${cause.code ? ` (${cause.code})` : ""}` });
    checks.push({ name: "Database schema", result: "Failure", details: "not checked: the database is unreachable" });
    return [...checks, policyCheck(config), ...notChecked("the database is unreachable")];
  }

  const version = await schemaVersion(database.pool);
  if (version.pending.length > 0) {
    checks.push({
      name: "Database schema",
      result: "Failure",
      details: `at ${version.current ?? "nothing (empty database)"}; ${version.pending.length} migration(s) not applied, up to ${version.latest}: run 'placement db migrate'`,
    });
    return [...checks, policyCheck(config), ...notChecked("the schema is not up to date")];
  }
  checks.push({ name: "Database schema", result: "Success", details: `at ${version.current}, the latest` });
  checks.push(policyCheck(config));

  const incomplete = await incompleteConsumers(database.db, {
    projectId: config.PLACEMENT_INCOMPLETE_CONSUMER_PROJECT_ID,
    userId: config.PLACEMENT_INCOMPLETE_CONSUMER_USER_ID,
  });
  checks.push(
    incomplete.length === 0
      ? { name: "Incomplete consumers", result: "Success", details: null }
      : {
          name: "Incomplete consumers",
          result: "Warning",
          details: `${incomplete.length} consumer(s) still carry the placeholder project or user of consumers written before microversion 1.8 (see 'placement audit')`,
        },
  );

  const over = await overCapacity(database.db);
  const shown = over.slice(0, 5).map((o) => `${o.provider_name} (${o.provider_uuid}) ${o.resource_class} ${o.used}/${o.capacity}`);
  checks.push(
    over.length === 0
      ? { name: "Providers over capacity", result: "Success", details: null }
      : {
          name: "Providers over capacity",
          result: "Warning",
          details: `${over.length} inventory(ies) hold more allocations than their capacity: ${shown.join(", ")}${over.length > 5 ? ", ..." : ""}`,
        },
  );
  const replicaUrls = config.PLACEMENT_READ_DATABASE_URL ?? [];
  if (replicaUrls.length > 0) checks.push(await readReplicasCheck(database, config, url, replicaUrls));
  return checks;
}
