/**
 * POST /claims: choose allocation candidates and claim them in one
 * transaction, so a scheduler never acts on a stale view and never sees a
 * conflict it could not have avoided.
 *
 * One transaction (READ COMMITTED, so every statement sees what has been
 * committed before it):
 * 1. The claim's consumers are created and locked (upsertConsumers, uuid
 *    order), exactly as the allocation write path starts. They must be new.
 * 2. The candidates engine runs on the current data; CandidateView orders its
 *    candidates for the pick.
 * 3. For each consumer, candidates are tried best first, each in a savepoint:
 *    lock the candidate's providers (one statement, id order, FOR NO KEY
 *    UPDATE like the write path's own provider locks), then write the
 *    allocation with the allocation write service (replaceAllocations), which
 *    re-checks capacity under the locks. A candidate that no longer fits is
 *    rolled back to its savepoint (which releases its locks) and the next one
 *    is tried; the first that fits stays.
 * 4. Commit. Until then the claimed providers stay locked, as for any write.
 *
 * Throughput under contention: the first pass locks with SKIP LOCKED, so K
 * claimers packing the same hosts do not queue on the hottest row: each
 * takes the best candidate nobody else is writing right now. Candidates
 * skipped as busy are tried again in a second pass that waits for the lock,
 * so a claim is refused only when every candidate was checked under its
 * locks and did not fit (no 409 while a fitting candidate existed). When a
 * locked check refused a candidate (the read was stale), the engine runs
 * again before the claim gives up, a bounded number of times.
 *
 * Why this cannot deadlock with the ordinary write path
 * (src/services/allocations.ts: consumers in uuid order, then providers in id
 * order, then inventory rows in id order): a claim takes its consumer locks
 * first, in uuid order, and they are rows of consumers that are new (nobody
 * else holds them unless writing the same new uuid, in which case it waits
 * for the claim or the claim for it, consumers before anything else, like two
 * ordinary writes). Then, at any moment, it holds the providers of the
 * candidates it has claimed plus those of the one candidate being tried,
 * taken in one statement in id order; a candidate that failed is released by
 * its savepoint's rollback before the next is locked. A SKIP LOCKED pass
 * never waits, so it cannot close a cycle. A waiting pass waits only when
 * every provider of the candidate has a higher id than every provider the
 * claim already holds: the claim then acquires providers in ascending id
 * order over its whole life, as a single ordinary write does, and two
 * writers that both acquire in ascending order cannot wait on each other in
 * a cycle. A busy candidate below that line (only possible for the second
 * and later consumers of a multi-consumer claim) is not waited for: the
 * whole transaction is rolled back and run again (MustRestart), which
 * releases everything. A deadlock with some other writer that locks in
 * another order is still retried whole by inTransaction.
 */
import { sql } from "drizzle-orm";
import type { Tx } from "../db/database.js";
import type { CandidatesQuery } from "../query/request-groups.js";
import type { Candidate } from "./candidates/combine.js";
import type { CandidatesResult, EngineOptions } from "./candidates/engine.js";
import { candidatesWithSummaries } from "./candidates/service.js";
import { getConsumerAllocations, replaceAllocations, type Resources } from "./allocations.js";
import { consumerGenerationConflict, deleteConsumersWithoutAllocations, upsertConsumers } from "./consumers.js";
import { CandidateView, type PickPolicy } from "./claims-pick.js";
import { CapacityExceeded, ClaimRefused, ProviderNotFound } from "./errors.js";
import { writeTransaction, type Store } from "./store.js";

export interface ClaimConsumer {
  consumerUuid: string;
  projectId: string;
  userId: string;
  /** Undefined below microversion 1.38 (stored as NULL, shown as "unknown"). */
  consumerType?: string;
}

export interface ClaimRequest {
  query: CandidatesQuery;
  engine: Pick<EngineOptions, "shape" | "maxCandidates" | "strategy">;
  /** One instance each, claimed in this order. */
  consumers: readonly ClaimConsumer[];
  pick: PickPolicy;
  /** How many other fitting allocation requests to return. */
  alternates: number;
  /** true: every consumer or none; false: as many as fit. */
  allOrNothing: boolean;
}

export interface ClaimedConsumer {
  consumerUuid: string;
  /** As GET /allocations/{consumer_uuid} shows them: provider uuid to its generation and resources. */
  allocations: Record<string, { generation: number; resources: Resources }>;
  consumerGeneration: number;
}

/** An allocation request of the engine, in provider uuids and class names. */
export interface AllocationRequest {
  allocations: Record<string, Resources>;
  /** Request group suffix to the provider uuids serving it. */
  mappings: Record<string, string[]>;
}

export interface ClaimOutcome {
  claims: ClaimedConsumer[];
  /** Consumers not placed (only when allOrNothing is false). */
  unplaced: string[];
  alternates: AllocationRequest[];
}

/** Rounds of the engine per claim: a further one only after a locked check found the last read stale. */
const MAX_ROUNDS = 3;

/** A busy candidate could not be waited for without breaking the lock order: run the whole claim again. */
class MustRestart extends Error {}

/** Thrown inside a savepoint to roll a busy candidate back. */
class Busy extends Error {}

/** Thrown inside a savepoint when a candidate's provider was deleted since it was read. */
class Gone extends Error {}

/** Throws ClaimRefused (nothing claimed), GenerationConflict (a consumer exists) or ConcurrentUpdate. */
export async function claim(store: Store, req: ClaimRequest): Promise<ClaimOutcome> {
  // Restarts (MustRestart) and deadlock retries each get the allocation writes' retry count.
  for (let restart = 0; ; restart++) {
    try {
      return await writeTransaction(store, (tx) => claimIn(tx, req), { retries: store.allocationRetries, during: "allocate" });
    } catch (err) {
      if (!(err instanceof MustRestart)) throw err;
      if (restart >= store.allocationRetries) throw new ClaimRefused({ reason: "busy" });
      store.onRetry?.("claim_restart");
      await new Promise((r) => setTimeout(r, Math.random() * 5 * (restart + 1)));
    }
  }
}

async function claimIn(tx: Tx, req: ClaimRequest): Promise<ClaimOutcome> {
  // 1. Consumers first, in uuid order, as every allocation write starts.
  const locked = await upsertConsumers(
    tx,
    req.consumers.map((c) => ({ uuid: c.consumerUuid, project: c.projectId, user: c.userId, type: c.consumerType })),
  );
  for (const c of req.consumers) {
    const row = locked.get(c.consumerUuid)!;
    // A claim makes new consumers; an existing one is what a null consumer_generation is refused for.
    if (!row.created) throw consumerGenerationConflict(c.consumerUuid, row.generation, null);
  }

  const placed: Array<{ consumer: ClaimConsumer; candidate: Candidate }> = [];
  let pending = [...req.consumers];
  let view: CandidateView | undefined;
  let found: CandidatesResult | undefined;
  let highestHeld = 0;
  let considered = 0;
  for (let round = 0; round < MAX_ROUNDS && pending.length > 0; round++) {
    // 2. Candidates on the data as committed now.
    found = await candidatesWithSummaries(tx, req.query, { ...req.engine, randomize: false });
    view = new CandidateView(found.candidates, found.summaries, req.pick);
    considered = Math.max(considered, found.candidates.length);
    let stale = false;
    // 3. Each consumer on the best candidate that fits under the locks.
    while (pending.length > 0) {
      const consumer = pending[0];
      const tried = await placeOne(tx, found, view, consumer, highestHeld);
      stale ||= tried.stale;
      if (!tried.candidate) break;
      view.claimed(tried.candidate);
      placed.push({ consumer, candidate: tried.candidate });
      highestHeld = Math.max(highestHeld, ...tried.candidate.resources.map((r) => r.providerId));
      pending = pending.slice(1);
    }
    if (!stale) break;
  }

  if (pending.length > 0 && (req.allOrNothing || placed.length === 0)) {
    if (placed.length > 0) throw new ClaimRefused({ reason: "partial", placed: placed.length, wanted: req.consumers.length });
    throw new ClaimRefused(considered === 0 ? { reason: "no candidates" } : { reason: "no fit", considered });
  }
  if (pending.length > 0) await deleteConsumersWithoutAllocations(tx, pending.map((c) => locked.get(c.consumerUuid)!.id));

  const claims: ClaimedConsumer[] = [];
  for (const { consumer } of placed) {
    const view = (await getConsumerAllocations(tx, consumer.consumerUuid))!;
    const allocations: ClaimedConsumer["allocations"] = {};
    for (const a of view.allocations) (allocations[a.providerUuid] ??= { generation: a.providerGeneration, resources: {} }).resources[a.className] = a.used;
    claims.push({ consumerUuid: consumer.consumerUuid, allocations, consumerGeneration: view.consumerGeneration });
  }
  const chosen = new Set(placed.map((p) => p.candidate));
  const alternates = req.alternates > 0 && view && found ? view.ordered().filter((c) => !chosen.has(c)).slice(0, req.alternates) : [];
  return { claims, unplaced: pending.map((c) => c.consumerUuid), alternates: alternates.map((c) => allocationRequest(found!, c)) };
}

type Attempt = "claimed" | "busy" | "refused";

/**
 * One consumer: every candidate that fits on what was read, best first, with
 * SKIP LOCKED; then those that were busy, waiting for their locks where the
 * lock order allows (see the header).
 */
async function placeOne(
  tx: Tx,
  found: CandidatesResult,
  view: CandidateView,
  consumer: ClaimConsumer,
  highestHeld: number,
): Promise<{ candidate?: Candidate; stale: boolean }> {
  let stale = false;
  const busy: Candidate[] = [];
  const outcome = (c: Candidate, a: Attempt) => {
    if (a === "refused") {
      view.refuse(c);
      stale = true;
    }
    return a === "claimed";
  };
  for (const c of view.ordered()) {
    const a = await attempt(tx, found, consumer, c, "skip");
    if (outcome(c, a)) return { candidate: c, stale };
    if (a === "busy") busy.push(c);
  }
  let mustRestart = false;
  for (const c of busy) {
    if (!view.fits(c)) continue;
    const waitable = c.resources.every((r) => r.providerId > highestHeld);
    const a = await attempt(tx, found, consumer, c, waitable ? "wait" : "skip");
    if (outcome(c, a)) return { candidate: c, stale };
    if (a === "busy") mustRestart = true;
  }
  if (mustRestart) throw new MustRestart();
  return { stale };
}

/** Locks the candidate's providers and writes the consumer's allocation, in a savepoint that a refusal rolls back. */
async function attempt(tx: Tx, found: CandidatesResult, consumer: ClaimConsumer, c: Candidate, lock: "skip" | "wait"): Promise<Attempt> {
  const providerIds = [...new Set(c.resources.map((r) => r.providerId))];
  const request = allocationRequest(found, c);
  try {
    await tx.transaction(async (sp) => {
      const res = await sp.execute(sql`
        SELECT id FROM resource_providers WHERE id = ANY(${sql.param(providerIds)}::int[])
        ORDER BY id FOR NO KEY UPDATE ${lock === "skip" ? sql`SKIP LOCKED` : sql``}`);
      if (res.rows.length < providerIds.length) {
        // Waiting, a missing row is a provider deleted since it was read.
        if (lock === "wait") throw new Gone();
        throw new Busy();
      }
      await replaceAllocations(sp, [
        {
          consumerUuid: consumer.consumerUuid,
          projectId: consumer.projectId,
          userId: consumer.userId,
          // Checked once when the consumer was created above.
          generation: undefined,
          consumerType: consumer.consumerType,
          allocations: request.allocations,
        },
      ], { in: "allocations", consumer: consumer.consumerUuid });
    });
    return "claimed";
  } catch (err) {
    if (err instanceof Busy) return "busy";
    // The allocation write service's capacity refusal, or a provider gone: this candidate no longer fits.
    if (err instanceof CapacityExceeded || err instanceof ProviderNotFound || err instanceof Gone) return "refused";
    throw err;
  }
}

function allocationRequest(found: CandidatesResult, c: Candidate): AllocationRequest {
  const allocations: Record<string, Resources> = {};
  for (const r of c.resources) (allocations[found.uuidOf(r.providerId)] ??= {})[found.resourceClassName(r.resourceClassId)] = r.amount;
  const mappings: Record<string, string[]> = {};
  for (const g of c.groups) mappings[g.suffix] = g.providers.map((id) => found.uuidOf(id));
  return { allocations, mappings };
}
