/**
 * Read replicas (PLACEMENT_READ_DATABASE_URL): which reads may run on a hot
 * standby, how far behind the primary a standby may be to serve them, and how
 * that is measured. Unset, nothing here runs and every query goes to
 * DATABASE_URL, as on a single machine.
 *
 * Which reads. A standby answers with the primary's data as it was a moment
 * ago. A read may go there only when that moment cannot reach a client's
 * conditional write: when nothing the client takes from the answer is sent
 * back as a precondition, and when the write that follows checks again on
 * the primary under its own locks. Per route:
 *
 *   GET /allocation_candidates    standby. The answer carries no generation:
 *     the client claims a candidate with PUT/POST /allocations (or the
 *     reshaper), whose consumer generation comes from GET /allocations, and
 *     the claim locks the providers' rows on the primary and checks capacity
 *     there (services/allocations.ts). A candidate read from a standby that
 *     is behind is at worst a candidate that is no longer free: the claim
 *     answers 409 and the scheduler asks again, as it does when another
 *     scheduler won the race. Nothing can be overcommitted through it.
 *   POST /claims                  primary. It reads candidates inside its
 *     write transaction and locks the rows it read; a standby cannot lock.
 *   GET /resource_providers[/{uuid}], its /inventories, /traits,
 *     /aggregates, /allocations   primary. Each answer carries the provider
 *     generation the client sends back with PUT (Nova's report client reads,
 *     diffs and writes with it): a stale generation is a 409 on every retry
 *     until the standby catches up, and a stale inventory diffed against the
 *     desired one writes the wrong change.
 *   GET /allocations/{consumer}   primary. Its consumer_generation is the
 *     precondition of the next PUT/POST /allocations for that consumer.
 *   GET /usages, /resource_providers/{uuid}/usages   primary. Nova counts
 *     quota from /usages and then claims: a check-then-act with no generation
 *     to catch a stale count, so a standby behind lets a project past its quota.
 *   GET /resource_classes, /traits   primary. A client creates a custom class
 *     or trait and names it in its next request; a standby behind would deny
 *     what the client has just made. They are small reads: nothing to gain.
 *   GET /changes                  primary. A client takes the cursor, reads the
 *     state it caches, then follows the feed: cursor and state must come from
 *     one server, and the long poll waits on the primary's notifications.
 *   /healthcheck, writes          primary.
 *
 * Which standby. Each is checked on a timer, never per request (monitor
 * connections of their own, so a busy pool cannot delay a check): first the
 * primary's pg_current_wal_lsn(), then on the standby the LSN it has
 * replayed. "Behind" is the time since the primary last had nothing the
 * standby has not replayed: the latest primary sample whose LSN the replayed
 * LSN reaches. An idle primary writes nothing, so a standby that has replayed
 * all of it is 0 s behind however old its last replayed commit is
 * (pg_last_xact_replay_timestamp() alone would call that lag); a standby
 * whose replay is paused (pg_wal_replay_pause()) falls behind from the first
 * write it has not replayed. The age of the last replayed commit is a second
 * upper bound, used when no sample is old enough (a server just started, a
 * primary that cannot be reached). Between checks the bound grows with the
 * time since the last one, so a standby serves a read only while
 * `behind at its last check + time since that check <= max lag`: every read
 * it serves reflects every write committed more than
 * PLACEMENT_READ_MAX_LAG_SECONDS earlier. A standby that cannot be reached,
 * that fails a read, that is not in recovery (promoted: its data may have
 * forked from the primary's), or that is not a copy of this primary (another
 * system identifier: its positions mean nothing here) serves nothing until a check finds it fit again;
 * the read goes to the primary. Several standbys are used in turn.
 */
import type { Logger } from "../log.js";
import { rootCause } from "../root-cause.js";
import { openDatabase, type Database, type Db, type SessionLimits } from "./database.js";

export interface ReadReplicaOptions {
  primaryUrl: string;
  replicaUrls: string[];
  maxLagSeconds: number;
  /** Connections per standby for the reads themselves. */
  poolSize: number;
  limits: SessionLimits;
  log: Logger;
}

/** What one standby looks like to the router, for metrics and `placement status`. */
export interface ReplicaState {
  /** host:port/database, without credentials. */
  name: string;
  /** Whether a read would be sent there now. */
  usable: boolean;
  /** How far behind the primary it was at its last check (seconds); null when unknown (never measured, or the check failed). */
  behindSeconds: number | null;
  /** When that check was (seconds ago): a read is sent there only while the two add up to at most the bound. */
  checkedSecondsAgo: number | null;
  /** Bytes of the primary's WAL not yet replayed at the last check; null when unknown. */
  bytesBehind: number | null;
  replayPaused: boolean;
  /** A short phrase: "streaming", "replay paused", "unreachable: ...", "not a standby (not in recovery)". */
  detail: string;
}

/** A read's database: a standby's, or the primary's when none is fit. */
export interface ReadTarget {
  db: Db;
  /** The standby's name; undefined for the primary. */
  replica?: string;
  /** The standby failed this read for being unavailable: it serves nothing until a check finds it fit. */
  unavailable(err: unknown): void;
}

/** Primary samples kept: enough to measure a standby far past any sensible bound. */
const HISTORY_MS = 10 * 60_000;
/** A check that has not answered by then counts as failed. */
const CHECK_TIMEOUT_MS = 2_000;
/** How long a check waits before looking again at a standby just short of the primary's position. */
const SECOND_LOOK_MS = 20;

/** "16/B374D848" as a number of bytes. */
export function parseLsn(text: string): bigint {
  const [hi, lo] = text.split("/");
  return (BigInt(`0x${hi}`) << 32n) | BigInt(`0x${lo}`);
}

/** The primary's WAL position over time, to tell how long ago a standby's replayed position was the primary's. */
export class PrimaryWalHistory {
  private readonly samples: Array<{ at: number; lsn: bigint }> = [];
  /** The primary's system identifier: positions compare only within one system (a standby made from it shares it). */
  system: string | undefined;

  add(at: number, lsn: bigint): void {
    this.samples.push({ at, lsn });
    while (this.samples.length > 1 && this.samples[0].at < at - HISTORY_MS) this.samples.shift();
  }

  latest(): { at: number; lsn: bigint } | undefined {
    return this.samples.at(-1);
  }

  /** The latest time at which the primary had written nothing beyond `replayed`; undefined when no sample says so. */
  caughtUpAt(replayed: bigint): number | undefined {
    for (let i = this.samples.length - 1; i >= 0; i--) if (this.samples[i].lsn <= replayed) return this.samples[i].at;
    return undefined;
  }
}

/** What a standby said at one check. */
export interface StandbyReading {
  at: number;
  inRecovery: boolean;
  system: string;
  replayLsn: bigint | null;
  /** Seconds since the last replayed transaction committed (on the primary's clock); null before any. */
  replayAgeSeconds: number | null;
  replayPaused: boolean;
}

/**
 * How far behind the primary a standby was at its reading (seconds), the
 * smaller of the two upper bounds of the header; undefined when neither exists.
 */
export function behindAtReading(reading: StandbyReading, primary: PrimaryWalHistory): number | undefined {
  if (reading.replayLsn === null) return undefined;
  const bounds: number[] = [];
  const caughtUpAt = primary.caughtUpAt(reading.replayLsn);
  if (caughtUpAt !== undefined) bounds.push(Math.max(0, (reading.at - caughtUpAt) / 1000));
  if (reading.replayAgeSeconds !== null) bounds.push(Math.max(0, reading.replayAgeSeconds));
  return bounds.length > 0 ? Math.min(...bounds) : undefined;
}

const SYSTEM_SQL = "(SELECT system_identifier::text FROM pg_control_system()) AS system";
const PRIMARY_QUERY = `SELECT pg_current_wal_lsn()::text AS lsn, ${SYSTEM_SQL}`;
const STANDBY_QUERY = `SELECT pg_is_in_recovery() AS in_recovery, ${SYSTEM_SQL},
       pg_last_wal_replay_lsn()::text AS replay_lsn,
       EXTRACT(EPOCH FROM now() - pg_last_xact_replay_timestamp())::float8 AS replay_age,
       CASE WHEN pg_is_in_recovery() THEN pg_is_wal_replay_paused() ELSE false END AS paused`;

/** A bounded wait on a monitor query: a standby that stopped answering (not refusing) must not stall the checks. */
function withTimeout<T>(work: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not answer within ${CHECK_TIMEOUT_MS} ms`)), CHECK_TIMEOUT_MS);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

/** Connections that only watch: one each, short bounds, otherwise as the server's (a pooler in front, say). */
function monitorConnection(url: string, limits: SessionLimits, log: Logger): Database {
  const bounded = CHECK_TIMEOUT_MS;
  return openDatabase(url, 1, log, { ...limits, acquireTimeoutMs: bounded, statementTimeoutMs: bounded, lockTimeoutMs: bounded, idleInTransactionTimeoutMs: bounded });
}

/** host:port/database of a URL, never its credentials. */
export function replicaName(url: string): string {
  const u = new URL(url);
  return `${u.hostname}:${u.port || "5432"}${u.pathname}`;
}

class Standby {
  readonly name: string;
  private reading: StandbyReading | undefined;
  private behind: number | undefined;
  private bytesBehind: number | null = null;
  /** Why the last check or read failed; cleared by a check that succeeds. */
  private failure: string | undefined;
  private checking = false;

  constructor(
    url: string,
    readonly database: Database,
    readonly monitor: Database,
    private readonly maxLagSeconds: number,
    private readonly log: Logger,
  ) {
    this.name = replicaName(url);
  }

  async check(primary: PrimaryWalHistory): Promise<void> {
    if (this.checking) return; // the last one is still waiting: its timeout decides
    this.checking = true;
    const wasUsable = this.usable(Date.now());
    try {
      let reading = await this.read();
      const latest = primary.latest();
      // Under steady writes a streaming standby is a few milliseconds short of the position just
      // sampled, which would date it back to the sample before, a whole interval earlier: look once more.
      if (latest && reading.replayLsn !== null && reading.replayLsn < latest.lsn && !reading.replayPaused) {
        await new Promise((r) => setTimeout(r, SECOND_LOOK_MS));
        reading = await this.read();
      }
      this.reading = reading;
      this.behind = behindAtReading(reading, primary);
      this.bytesBehind =
        latest && reading.replayLsn !== null ? Number(latest.lsn > reading.replayLsn ? latest.lsn - reading.replayLsn : 0n) : null;
      this.failure = !reading.inRecovery
        ? "not a standby (not in recovery)"
        : primary.system !== undefined && reading.system !== primary.system
          ? `not a standby of this primary (system identifier ${reading.system}, the primary's ${primary.system})`
          : undefined;
    } catch (err) {
      this.failure = `unreachable: ${rootCause(err).message}`;
    } finally {
      this.checking = false;
    }
    const usable = this.usable(Date.now());
    if (usable !== wasUsable) {
      if (usable) this.log.info("read replica serving reads", { replica: this.name });
      else this.log.warn("read replica skipped: reads go to the primary", { replica: this.name, why: this.state(Date.now()).detail });
    }
  }

  private async read(): Promise<StandbyReading> {
    const at = Date.now();
    const result = await withTimeout(this.monitor.pool.query(STANDBY_QUERY), `standby ${this.name}`);
    const row = result.rows[0] as { in_recovery: boolean; system: string; replay_lsn: string | null; replay_age: number | null; paused: boolean };
    return {
      at,
      inRecovery: row.in_recovery,
      system: row.system,
      replayLsn: row.replay_lsn === null ? null : parseLsn(row.replay_lsn),
      replayAgeSeconds: row.replay_age,
      replayPaused: row.paused,
    };
  }

  unavailable(err: unknown): void {
    this.failure = `unreachable: ${rootCause(err).message}`;
    this.log.warn("read replica failed a read: reads go to the primary", { replica: this.name, cause: rootCause(err) });
  }

  /** Behind at the last check plus the time since it: the most a read there could miss now. */
  private behindNow(now: number): number | undefined {
    if (this.behind === undefined || !this.reading) return undefined;
    return this.behind + Math.max(0, now - this.reading.at) / 1000;
  }

  usable(now: number): boolean {
    const behind = this.behindNow(now);
    return this.failure === undefined && behind !== undefined && behind <= this.maxLagSeconds;
  }

  state(now: number): ReplicaState {
    const behindNow = this.behindNow(now);
    const paused = this.reading?.replayPaused ?? false;
    let detail = this.failure ?? (paused ? "replay paused" : "streaming");
    if (!this.failure && behindNow !== undefined && behindNow > this.maxLagSeconds) detail += `, behind more than ${this.maxLagSeconds} s`;
    if (!this.reading && !this.failure) detail = "not checked yet";
    const seconds = (n: number | undefined) => (n === undefined ? null : Math.round(n * 1000) / 1000);
    return {
      name: this.name,
      usable: this.usable(now),
      behindSeconds: this.failure ? null : seconds(this.behind),
      checkedSecondsAgo: seconds(this.reading && (now - this.reading.at) / 1000),
      bytesBehind: this.bytesBehind,
      replayPaused: paused,
      detail,
    };
  }
}

/** The standbys of one process, their checks, and the choice of a database per read. */
export class ReadReplicas {
  private readonly primaryHistory = new PrimaryWalHistory();
  private next = 0;
  private timer: NodeJS.Timeout | undefined;
  private refreshing: Promise<void> | undefined;
  private readonly servedListeners: Array<(by: "replica" | "primary") => void> = [];

  private constructor(
    private readonly primary: Db,
    private readonly primaryMonitor: Database,
    private readonly standbys: Standby[],
    private readonly log: Logger,
    readonly maxLagSeconds: number,
  ) {}

  /**
   * Opens the standbys' pools and checks them once, so that a server
   * serves from them from its first request; `watch` keeps checking on a timer.
   */
  static async open(primary: Db, options: ReadReplicaOptions, watch = true): Promise<ReadReplicas> {
    const standbys = options.replicaUrls.map(
      (url) =>
        new Standby(url, openDatabase(url, options.poolSize, options.log, options.limits), monitorConnection(url, options.limits, options.log), options.maxLagSeconds, options.log),
    );
    const replicas = new ReadReplicas(primary, monitorConnection(options.primaryUrl, options.limits, options.log), standbys, options.log, options.maxLagSeconds);
    await replicas.refresh();
    if (watch) {
      // Often enough that a fit standby's bound (which grows between checks) stays well inside the limit.
      const every = Math.min(1000, Math.max(100, (options.maxLagSeconds * 1000) / 4));
      replicas.timer = setInterval(() => void replicas.refresh(), every);
      replicas.timer.unref();
    }
    return replicas;
  }

  /** One round of checks: the primary's position, then every standby's. */
  refresh(): Promise<void> {
    this.refreshing ??= this.checkAll().finally(() => (this.refreshing = undefined));
    return this.refreshing;
  }

  private async checkAll(): Promise<void> {
    try {
      const at = Date.now();
      const result = await withTimeout(this.primaryMonitor.pool.query(PRIMARY_QUERY), "the primary");
      const row = result.rows[0] as { lsn: string; system: string };
      this.primaryHistory.add(at, parseLsn(row.lsn));
      this.primaryHistory.system = row.system;
    } catch (err) {
      // No sample: the standbys' bounds grow until the primary answers again.
      this.log.debug("read replica monitor: no primary WAL position", { cause: rootCause(err) });
    }
    await Promise.all(this.standbys.map((s) => s.check(this.primaryHistory)));
  }

  /** Where a read that may be stale goes now: the next fit standby in turn, else the primary. */
  pick(): ReadTarget {
    const now = Date.now();
    for (let i = 0; i < this.standbys.length; i++) {
      const standby = this.standbys[(this.next + i) % this.standbys.length];
      if (!standby.usable(now)) continue;
      this.next = (this.next + i + 1) % this.standbys.length;
      return { db: standby.database.db, replica: standby.name, unavailable: (err) => standby.unavailable(err) };
    }
    return { db: this.primary, unavailable: () => undefined };
  }

  /** Told where each read was served in the end (the metrics count them). */
  onServed(listener: (by: "replica" | "primary") => void): void {
    this.servedListeners.push(listener);
  }

  served(by: "replica" | "primary"): void {
    for (const l of this.servedListeners) l(by);
  }

  states(): ReplicaState[] {
    const now = Date.now();
    return this.standbys.map((s) => s.state(now));
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.refreshing?.catch(() => undefined);
    await Promise.all([this.primaryMonitor.close(), ...this.standbys.flatMap((s) => [s.database.close(), s.monitor.close()])]);
  }
}
