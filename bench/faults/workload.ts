/**
 * A scheduler-and-migrations workload over HTTP for fault tests and the soak:
 * clients ask for allocation candidates and claim one for a new consumer,
 * move consumers to other providers, and delete them. Every answer is
 * counted, and a ledger keeps what the server acknowledged, so that the
 * tables can be checked against it afterwards (see invariants.ts).
 *
 * A write that got a 503 or lost its connection is retried with the same
 * body and consumer generation, as a careful client would: a 409 then means
 * the first attempt had committed, which the client confirms by reading the
 * consumer back. A write still unresolved when the run ends is kept as
 * "either the old allocations or the new ones, in full".
 */
import { randomUUID } from "node:crypto";

/** Allocations of one consumer: provider uuid -> resource class -> amount. */
export type Claim = Record<string, Record<string, number>>;

/** Allocations as the API writes them: provider uuid -> {resources}. */
type Allocations = Record<string, { resources: Record<string, number> }>;

/** A request's outcome: its HTTP status, or how it failed without one. */
export type Outcome = number | "dropped" | "hung";

export const PROJECT = "6f8f2b8e-0c2a-4d8e-9a51-1a2b3c4d5e6f";
export const USER = "3a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d";

export class Ledger {
  /** What each consumer holds as far as the server has told us. */
  readonly acknowledged = new Map<string, Claim>();
  /** Consumers whose last write has no known outcome: they must hold one of these, in full (undefined: nothing). */
  readonly uncertain = new Map<string, Array<Claim | undefined>>();
  /** Writes retried after a 503 or a dropped connection, and how many of them had committed the first time. */
  retried = 0;
  retriedHadCommitted = 0;
}

export interface WorkloadOptions {
  /** Base URLs of the servers; requests rotate over them. */
  baseUrls: string[];
  /** A request taking longer than this counts as hung (the server's own bounds are far shorter). */
  hangAfterMs?: number;
  /** Retries of a write whose outcome is unknown. */
  retries?: number;
}

export class Workload {
  readonly ledger = new Ledger();
  readonly counts = new Map<string, number>();
  private next = 0;
  private readonly busy = new Set<string>();
  private readonly hangAfterMs: number;
  private readonly retries: number;

  constructor(private readonly options: WorkloadOptions) {
    this.hangAfterMs = options.hangAfterMs ?? 30_000;
    this.retries = options.retries ?? 20;
  }

  /** One request, never throwing: a status, "dropped" (connection lost) or "hung". */
  async send(method: string, path: string, body?: unknown): Promise<{ outcome: Outcome; body: unknown }> {
    const base = this.options.baseUrls[this.next++ % this.options.baseUrls.length];
    const label = `${method} ${path.split("/")[1].split("?")[0]}`;
    let outcome: Outcome;
    let parsed: unknown;
    try {
      const res = await fetch(`${base}${path}`, {
        method,
        headers: {
          "x-auth-token": "admin",
          accept: "application/json",
          "openstack-api-version": "placement 1.39",
          ...(body === undefined ? {} : { "content-type": "application/json" }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(this.hangAfterMs),
      });
      const text = await res.text();
      outcome = res.status;
      parsed = text ? safeJson(text) : undefined;
    } catch (err) {
      outcome = (err as Error).name === "TimeoutError" ? "hung" : "dropped";
    }
    const key = `${label} ${outcome}`;
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
    return { outcome, body: parsed };
  }

  /** Providers for the run: `roots` compute nodes, every other one with its VCPU on a child provider (a tree). */
  async createProviders(roots: number, vcpus = 16, memoryMb = 16_384): Promise<string[]> {
    const uuids: string[] = [];
    for (let i = 0; i < roots; i++) {
      const root = randomUUID();
      await this.mustSend("POST", "/resource_providers", { name: `fault-node-${root}`, uuid: root });
      if (i % 2 === 0) {
        await this.setInventory(root, { VCPU: vcpus, MEMORY_MB: memoryMb });
      } else {
        const child = randomUUID();
        await this.mustSend("POST", "/resource_providers", { name: `fault-numa-${child}`, uuid: child, parent_provider_uuid: root });
        await this.setInventory(root, { MEMORY_MB: memoryMb });
        await this.setInventory(child, { VCPU: vcpus });
        uuids.push(child);
      }
      uuids.push(root);
    }
    return uuids;
  }

  private async setInventory(uuid: string, totals: Record<string, number>): Promise<void> {
    const inventories = Object.fromEntries(Object.entries(totals).map(([rc, total]) => [rc, { total }]));
    await this.mustSend("PUT", `/resource_providers/${uuid}/inventories`, { resource_provider_generation: 0, inventories });
  }

  private async mustSend(method: string, path: string, body?: unknown): Promise<unknown> {
    const { outcome, body: answer } = await this.send(method, path, body);
    if (typeof outcome !== "number" || outcome >= 300) throw new Error(`${method} ${path}: ${outcome} ${JSON.stringify(answer)}`);
    return answer;
  }

  /** Asks for candidates and returns one of them, or undefined when none came back. */
  private async pickCandidate(): Promise<Claim | undefined> {
    const vcpu = 1 + Math.floor(Math.random() * 3);
    const { outcome, body } = await this.send("GET", `/allocation_candidates?resources=VCPU:${vcpu},MEMORY_MB:512&limit=20`);
    const requests = outcome === 200 ? (body as { allocation_requests?: Array<{ allocations: Allocations }> }).allocation_requests : [];
    if (!requests?.length) return undefined;
    const chosen = requests[Math.floor(Math.random() * requests.length)];
    return Object.fromEntries(Object.entries(chosen.allocations).map(([rp, a]) => [rp, a.resources]));
  }

  /** Schedules a new consumer: candidates, then a claim. */
  async schedule(): Promise<void> {
    const claim = await this.pickCandidate();
    if (!claim) return;
    const consumer = randomUUID();
    await this.write(consumer, undefined, claim, null);
  }

  /** Moves a consumer to another candidate (a migration), or deletes it (one in five). */
  async migrateOrDelete(): Promise<void> {
    const consumer = this.takeIdleConsumer();
    if (!consumer) return;
    try {
      const before = this.ledger.acknowledged.get(consumer)!;
      const { outcome, body } = await this.send("GET", `/allocations/${consumer}`);
      if (outcome !== 200) return;
      const generation = (body as { consumer_generation: number }).consumer_generation;
      if (Math.random() < 0.2) return await this.remove(consumer, before);
      const claim = await this.pickCandidate();
      if (claim) await this.write(consumer, before, claim, generation);
    } finally {
      this.busy.delete(consumer);
    }
  }

  private takeIdleConsumer(): string | undefined {
    const idle = [...this.ledger.acknowledged.keys()].filter((c) => !this.busy.has(c));
    if (idle.length === 0) return undefined;
    const consumer = idle[Math.floor(Math.random() * idle.length)];
    this.busy.add(consumer);
    return consumer;
  }

  /**
   * PUT a consumer's allocations from `before` (undefined: a new consumer) to
   * `claim`, retrying while the outcome is unknown; the ledger ends with what
   * the server committed.
   */
  private async write(consumer: string, before: Claim | undefined, claim: Claim, generation: number | null): Promise<void> {
    const body = {
      allocations: Object.fromEntries(Object.entries(claim).map(([rp, resources]) => [rp, { resources }])),
      project_id: PROJECT,
      user_id: USER,
      consumer_generation: generation,
      consumer_type: "INSTANCE",
    };
    for (let attempt = 0; attempt <= this.retries; attempt++) {
      if (attempt === 1) this.ledger.retried++;
      const { outcome } = await this.send("PUT", `/allocations/${consumer}`, body);
      if (outcome === 204) return this.settle(consumer, claim);
      if (outcome === 409) {
        if (attempt === 0) return; // capacity or a real conflict: `before` stands
        // On a retry the conflict may be our own first attempt having committed: read it back.
        const held = await this.read(consumer);
        if (held === "unknown") break;
        if (sameClaim(held, claim)) {
          this.ledger.retriedHadCommitted++;
          return this.settle(consumer, held);
        }
        if (sameClaim(held, before)) return this.settle(consumer, held);
        break; // neither: left uncertain, so the invariant check reports it
      }
      if (outcome !== 503 && outcome !== "dropped" && outcome !== "hung") return; // counted; the invariants judge the rest
      await pause(attempt);
    }
    this.ledger.uncertain.set(consumer, [before, claim]);
    this.ledger.acknowledged.delete(consumer);
  }

  private async remove(consumer: string, before: Claim): Promise<void> {
    for (let attempt = 0; attempt <= this.retries; attempt++) {
      if (attempt === 1) this.ledger.retried++;
      const { outcome } = await this.send("DELETE", `/allocations/${consumer}`);
      if (outcome === 204 || (outcome === 404 && attempt > 0)) {
        if (outcome === 404) this.ledger.retriedHadCommitted++;
        return this.settle(consumer, undefined);
      }
      if (outcome !== 503 && outcome !== "dropped" && outcome !== "hung") return;
      await pause(attempt);
    }
    this.ledger.uncertain.set(consumer, [before, undefined]);
    this.ledger.acknowledged.delete(consumer);
  }

  /** The consumer's allocations as the server reports them; "unknown" when it cannot say now. */
  private async read(consumer: string): Promise<Claim | undefined | "unknown"> {
    const { outcome, body } = await this.send("GET", `/allocations/${consumer}`);
    if (outcome !== 200) return "unknown";
    const entries = Object.entries((body as { allocations: Allocations }).allocations);
    return entries.length === 0 ? undefined : Object.fromEntries(entries.map(([rp, a]) => [rp, a.resources]));
  }

  private settle(consumer: string, held: Claim | undefined): void {
    this.ledger.uncertain.delete(consumer);
    if (held) this.ledger.acknowledged.set(consumer, held);
    else this.ledger.acknowledged.delete(consumer);
  }

  /** `clients` loops of schedule / migrate-or-delete (two to one) until `until` resolves. */
  async run(clients: number, until: Promise<unknown>): Promise<void> {
    let stop = false;
    void until.then(() => (stop = true));
    await Promise.all(
      Array.from({ length: clients }, async () => {
        while (!stop) {
          if (Math.random() < 0.66) await this.schedule();
          else await this.migrateOrDelete();
        }
      }),
    );
  }

  /** Outcome counts summed over request kinds: status (or dropped/hung) -> count. */
  outcomes(): Map<string, number> {
    const out = new Map<string, number>();
    for (const [key, n] of this.counts) {
      const outcome = key.split(" ").pop()!;
      out.set(outcome, (out.get(outcome) ?? 0) + n);
    }
    return out;
  }
}

export function sameClaim(a: Claim | undefined, b: Claim | undefined): boolean {
  return canonical(a) === canonical(b);
}

export function canonical(claim: Claim | undefined): string {
  if (!claim) return "{}";
  const rows = Object.entries(claim).flatMap(([rp, resources]) => Object.entries(resources).map(([rc, n]) => `${rp}/${rc}=${n}`));
  return rows.sort().join(",");
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

const pause = (attempt: number) => new Promise((r) => setTimeout(r, Math.min(1000, 50 * 2 ** attempt) * (0.5 + Math.random())));
