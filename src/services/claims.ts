/**
 * POST /claims: choose allocation candidates and claim them, so a scheduler
 * never acts on a stale view and never sees a conflict it could not have
 * avoided, at about the cost of one candidates request and one allocation
 * write.
 *
 * A round:
 * 1. Outside any transaction, the candidates are answered exactly as GET
 *    /allocation_candidates answers them (the same paths, the cloud view
 *    brought up to date from the change feed), into a sink that keeps them
 *    (candidates/collecting-sink.ts); CandidateView orders them for the
 *    pick. A claim mostly takes one of the first candidates it tries, so
 *    both are lazy: a flat answer keeps its anchors and builds a candidate
 *    when it is first tried, and pick random or first checks and hands out
 *    candidates one at a time (pack and spread must weigh them all first,
 *    which over a flat answer they do by index, then hand them out best
 *    first off a heap, building only the candidates they hand out).
 *    No answer at all is a 409 at once, at the cost of an empty candidates
 *    answer. The first answer depends only on the query, so POST /claims
 *    reads it while the body arrives and is checked (claimWhileReading).
 * 2. A claim of one consumer whose best candidates are each on one provider
 *    (every candidate of a flat cloud) is written by one statement, its own
 *    transaction (claims-statement.ts, whose header says why it can neither
 *    overcommit nor deadlock): consumer, the first free provider of up to
 *    FIRST_FREE_BATCH, its inventory rows, the check on them, the write.
 *    When every provider with room is held by another writer, the same
 *    statement waits for the best one's writer to commit and then checks
 *    what it left, holding nothing else meanwhile: a transaction
 *    waiting there would hold every provider it had found full until it
 *    ends, and claimers converging on the last free hosts would queue behind
 *    each other's full hosts. A provider whose locked rows had no room is left
 *    out and the statement runs again on the next ones, a few times, then
 *    the answer is read again. When it writes nothing because the consumer
 *    is not new or its owner not yet known, or on the last round, the
 *    transaction below claims from the same answer: it is also the plain
 *    path beside the statement and its oracle (ClaimPaths).
 *    Every other claim (several consumers, candidates spanning providers):
 *    one short write transaction (READ COMMITTED, so every statement sees
 *    what has been committed before it): the claim's consumers are created
 *    and locked (upsertConsumers, uuid order), exactly as the allocation
 *    write path starts; they must be new. Then for each consumer, candidates
 *    best first: lock the candidate's providers (one statement, id order,
 *    FOR NO KEY UPDATE like the write path's own provider locks), then the
 *    write path's own check-and-write statement (writeWithinCapacity in
 *    allocations.ts: the capacity rule of rules/capacity.ts against the
 *    committed usage, the insert, the generation bumps, all in one
 *    statement, so the feed's triggers fire as for any write). A candidate
 *    that no longer fits writes nothing and the next one is tried in the
 *    same transaction; a first-try claim is BEGIN, consumers, lock, write,
 *    COMMIT. The answer is shaped from what was written, without reading it back.
 * 3. When a consumer found no candidate and some candidate was refused under
 *    its locks (the view was older than the commits that took its room), the
 *    transaction is rolled back and the round runs again on a fresh answer,
 *    a bounded number of times; so a claim is refused when nothing fitted at
 *    the time of its last transaction.
 *
 * Throughput under contention: the first pass locks with SKIP LOCKED, so K
 * claimers packing the same hosts do not queue on the hottest row: each
 * takes the best candidate nobody else is writing right now. Candidates on
 * one provider each (all of a flat cloud's) are locked by one statement that
 * returns the first of their providers free of other writers (ORDER BY the
 * preference, LIMIT 1, SKIP LOCKED) and with room for its candidate in the
 * statement's snapshot, so finding a free host among busy ones costs one
 * round trip, not one per busy host, and a host filled since the answer is
 * passed over without a lock (locked, it would be held to the transaction's
 * end, and claimers packing the same hosts would find it busy). Candidates
 * skipped as busy are tried again in a second pass that waits for the lock,
 * so a claim is refused only when every candidate was checked, under its
 * locks or in the snapshot of a statement run after the answer, and did not
 * fit (no 409 while a fitting candidate existed).
 *
 * Why the transaction cannot deadlock with the ordinary write path (the
 * statement's reasons are in claims-statement.ts)
 * (src/services/allocations.ts: consumers in uuid order, then providers in id
 * order, then inventory rows in id order): a claim takes its consumer locks
 * first, in uuid order, and they are rows of consumers that are new (nobody
 * else holds them unless writing the same new uuid, in which case it waits
 * for the claim or the claim for it, consumers before anything else, like two
 * ordinary writes). Its inventory rows are locked by the insert's usage
 * trigger after its providers', as for a new consumer's ordinary write. Of
 * providers it holds every one any of its lock statements returned (a
 * candidate refused under its locks keeps them until the transaction ends:
 * no savepoint to release them costs fewer round trips, and the transaction
 * is short). A SKIP LOCKED pass never waits, so it cannot close a cycle. A
 * waiting pass waits only when every provider of the candidate has a higher
 * id than every provider the claim already holds: the claim then acquires
 * providers in ascending id order over its whole life, as a single ordinary
 * write does, and two writers that both acquire in ascending order cannot
 * wait on each other in a cycle. A busy candidate below that line is not
 * waited for: the whole transaction is rolled back and run again
 * (MustRestart), which releases everything. A deadlock with some other
 * writer that locks in another order is still retried whole by
 * inTransaction.
 */
import { sql } from "drizzle-orm";
import type { Tx } from "../db/database.js";
import { executePrepared } from "../db/prepared.js";
import type { CandidatesQuery } from "../query/request-groups.js";
import type { AnswerShape } from "./candidates/answer-shape.js";
import { CollectingSink, type CollectedAnswer } from "./candidates/collecting-sink.js";
import type { Candidate } from "./candidates/combine.js";
import type { CandidatesAnswerer } from "./replica-candidates.js";
import { writeWithinCapacity, type Resources } from "./allocations.js";
import { consumerGenerationConflict, deleteConsumersWithoutAllocations, upsertConsumers, type LockedConsumer } from "./consumers.js";
import { CandidateView, type PickPolicy } from "./claims-pick.js";
import { claimInOneStatement, FIRST_FREE_BATCH, firstWindow, offersWithoutRoomSql, onOneProvider, providerOf } from "./claims-statement.js";
import { CapacityExceeded, ClaimRefused } from "./errors.js";
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
  /** The answer's shape at the request's microversion (from 1.29 a candidate may span a tree). */
  shape: AnswerShape;
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

/** An allocation request of the answer, in provider uuids and class names. */
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

/** Which write paths a claim may take: without oneStatement, only the transaction (the plain path, the fast one's oracle). */
export interface ClaimPaths {
  oneStatement: boolean;
}

/** Answers per claim: a further one only after a locked check found the last one stale. */
const MAX_ROUNDS = 3;

/** The longest pause before a restart (see writeRound). */
const MAX_RESTART_PAUSE_MS = 200;

/** A busy candidate could not be waited for without breaking the lock order: run the whole transaction again. */
class MustRestart extends Error {}

/** A consumer found no candidate and the answer was stale: roll back and answer again. */
class Stale extends Error {}

/** What a claim takes from POST /claims' body: who claims and how to choose. */
export type ClaimChoice = Omit<ClaimRequest, "query" | "shape">;

/**
 * Throws ClaimRefused (nothing claimed), GenerationConflict (a consumer
 * exists), ConcurrentUpdate, or the candidates answer's own 400s.
 */
export function claim(
  store: Store,
  candidates: Pick<CandidatesAnswerer, "answer">,
  req: ClaimRequest,
  paths: ClaimPaths = { oneStatement: true },
): Promise<ClaimOutcome> {
  return claimWhileReading(store, candidates, req, Promise.resolve(req), paths);
}

/**
 * A claim whose choice (POST /claims' body) is still being read: the first
 * answer depends only on the query, so it is read meanwhile, and a request
 * spends the time its body takes to arrive and be checked waiting for the
 * database's answer instead. A failed `choice` is the claim's failure
 * whatever the answer does (the body is checked before the query's names,
 * as when the one waited for the other).
 */
export async function claimWhileReading(
  store: Store,
  candidates: Pick<CandidatesAnswerer, "answer">,
  target: Pick<ClaimRequest, "query" | "shape">,
  choice: Promise<ClaimChoice>,
  paths: ClaimPaths = { oneStatement: true },
): Promise<ClaimOutcome> {
  const first = answerOf(candidates, target);
  // Awaited below only once the choice is known; when the choice fails, the answer's own failure goes unread.
  first.catch(() => undefined);
  const req: ClaimRequest = { ...(await choice), ...target };
  let considered = 0;
  for (let round = 1; ; round++) {
    // 1. The answer, outside any transaction.
    const found = round === 1 ? await first : await answerOf(candidates, req);
    if (found.size === 0) throw new ClaimRefused(considered === 0 ? { reason: "no candidates" } : { reason: "no fit", considered });
    considered = Math.max(considered, found.size);
    // 2. One statement when the claim allows it (claims-statement.ts), else or when it wrote nothing one transaction;
    // 3. undefined: stale, answer again.
    const fast = paths.oneStatement ? await oneStatement(store, found, req) : undefined;
    // On the last round the transaction has the last word: a 409 only after it checked every candidate under its locks.
    const outcome = fast === "stale" && round < MAX_ROUNDS ? undefined : typeof fast === "object" ? fast : await writeRound(store, found, req, round === MAX_ROUNDS);
    if (outcome) return outcome;
    store.onRetry?.("claim_stale");
  }
}

/** The candidates, as GET /allocation_candidates answers them, in preference order. */
async function answerOf(candidates: Pick<CandidatesAnswerer, "answer">, target: Pick<ClaimRequest, "query" | "shape">): Promise<CollectedAnswer> {
  const sink = new CollectingSink(target.query);
  await candidates.answer(target.query, target.shape, sink, "preference");
  return sink.answer();
}

/** One round's transaction, run again whole on MustRestart (and on deadlock by writeTransaction); undefined when it found the answer stale. */
async function writeRound(store: Store, found: CollectedAnswer, req: ClaimRequest, last: boolean): Promise<ClaimOutcome | undefined> {
  for (let restart = 0; ; restart++) {
    try {
      return await writeTransaction(store, (tx) => claimIn(tx, found, req, last), { retries: store.allocationRetries, during: "allocate" });
    } catch (err) {
      if (err instanceof Stale) return undefined;
      if (!(err instanceof MustRestart)) throw err;
      if (restart >= store.allocationRetries) throw new ClaimRefused({ reason: "busy" });
      store.onRetry?.("claim_restart");
      // Claimers queueing on the same hot hosts keep one busy for several commits in a row: backing off
      // exponentially, the restarts span the time such a queue takes to drain, not a few milliseconds.
      await new Promise((r) => setTimeout(r, Math.random() * Math.min(MAX_RESTART_PAUSE_MS, 5 * 2 ** restart)));
    }
  }
}

/** What the transaction holds: provider locks (with each provider's generation as it stands in it). */
interface Held {
  generations: Map<number, number>;
  highest: number;
}

async function claimIn(tx: Tx, found: CollectedAnswer, req: ClaimRequest, last: boolean): Promise<ClaimOutcome> {
  // Consumers first, in uuid order, as every allocation write starts.
  const locked = await upsertConsumers(
    tx,
    req.consumers.map((c) => ({ uuid: c.consumerUuid, project: c.projectId, user: c.userId, type: c.consumerType })),
  );
  for (const c of req.consumers) {
    const row = locked.get(c.consumerUuid)!;
    // A claim makes new consumers; an existing one is what a null consumer_generation is refused for.
    if (!row.created) throw consumerGenerationConflict(c.consumerUuid, row.generation, null);
  }

  // Made per transaction: a restarted one starts again from the answer as it came.
  const view = new CandidateView(found, req.pick);
  const held: Held = { generations: new Map(), highest: 0 };
  const placed: Array<{ consumer: LockedConsumer; candidate: Candidate }> = [];
  let pending = [...req.consumers];
  while (pending.length > 0) {
    const consumer = locked.get(pending[0].consumerUuid)!;
    const tried = await placeOne(tx, found, view, consumer, held);
    if (!tried.candidate) {
      if (tried.stale && !last) throw new Stale();
      break;
    }
    view.claimed(tried.candidate);
    placed.push({ consumer, candidate: tried.candidate });
    pending = pending.slice(1);
  }

  if (pending.length > 0 && (req.allOrNothing || placed.length === 0)) {
    if (placed.length > 0) throw new ClaimRefused({ reason: "partial", placed: placed.length, wanted: req.consumers.length });
    throw new ClaimRefused({ reason: "no fit", considered: found.size });
  }
  if (pending.length > 0) await deleteConsumersWithoutAllocations(tx, pending.map((c) => locked.get(c.consumerUuid)!.id));

  return shapeOutcome(found, view, placed, held.generations, pending.map((c) => c.consumerUuid), req.alternates);
}

/**
 * The answer, shaped from what was written: `generations` holds every
 * provider's generation as the write left it; each consumer's was bumped once.
 */
function shapeOutcome(
  found: CollectedAnswer,
  view: CandidateView,
  placed: ReadonlyArray<{ consumer: Pick<LockedConsumer, "uuid" | "generation">; candidate: Candidate }>,
  generations: ReadonlyMap<number, number>,
  unplaced: string[],
  wantedAlternates: number,
): ClaimOutcome {
  const claims = placed.map(({ consumer, candidate }): ClaimedConsumer => {
    const allocations: ClaimedConsumer["allocations"] = {};
    for (const r of candidate.resources) {
      const entry = (allocations[found.uuidOf(r.providerId)] ??= { generation: generations.get(r.providerId)!, resources: {} });
      entry.resources[found.resourceClassName(r.resourceClassId)] = r.amount;
    }
    return { consumerUuid: consumer.uuid, allocations, consumerGeneration: consumer.generation + 1 };
  });
  const chosen = new Set(placed.map((p) => p.candidate));
  const alternates: Candidate[] = [];
  if (wantedAlternates > 0) {
    for (const c of view.ordered()) {
      if (alternates.length === wantedAlternates) break;
      if (!chosen.has(c)) alternates.push(c);
    }
  }
  return { claims, unplaced, alternates: alternates.map((c) => allocationRequest(found, c)) };
}

/** Statements per answer on the fast path: a further one only after the last found its candidates' room taken. */
const STATEMENT_TRIES = 3;

/**
 * The fast path (claims-statement.ts): a claim of one consumer whose best
 * candidates are each on one provider, written by one statement (which,
 * when every provider with room is held, waits for the best one's writer).
 * "stale" when the statements found the answer's candidates full and the
 * answer should be read again; undefined when the transaction is to claim
 * from the same answer: the consumer was not new or its project or user not
 * yet known (the transaction words the 409 or creates them), a statement was
 * rolled back by a deadlock, or the candidates are not all on one provider
 * each.
 */
async function oneStatement(store: Store, found: CollectedAnswer, req: ClaimRequest): Promise<ClaimOutcome | "stale" | undefined> {
  if (req.consumers.length !== 1) return undefined;
  const [consumer] = req.consumers;
  const view = new CandidateView(found, req.pick);
  let stale = false;
  for (let i = 0; i < STATEMENT_TRIES; i++) {
    const window = firstWindow(view.ordered());
    if (window.length === 0) break;
    const outcome = await claimInOneStatement(store.db, consumer, window);
    if ("written" in outcome) {
      view.claimed(outcome.written);
      const generations = new Map([[providerOf(outcome.written), outcome.generation]]);
      return shapeOutcome(found, view, [{ consumer: { uuid: consumer.consumerUuid, generation: 0 }, candidate: outcome.written }], generations, [], req.alternates);
    }
    if ("retryable" in outcome) {
      // Counted as a transaction's retry is, so a statement's deadlocks show in the metrics too.
      store.onRetry?.(outcome.retryable);
      return undefined;
    }
    const why = outcome.notWritten;
    if (why.why === "consumer") return undefined;
    // Someone took the room since the answer (or deleted the providers that had it): those
    // candidates are out of this view, the next ones are tried.
    for (const c of window) if (why.why !== "refused" || providerOf(c) === why.providerId) view.refuse(c);
    stale = true;
    store.onRetry?.("claim_statement_stale");
  }
  return stale ? "stale" : undefined;
}

type Attempt = "claimed" | "busy" | "refused";

/**
 * One consumer: every candidate that fits on what was read, best first, with
 * SKIP LOCKED; then those that were busy, waiting for their locks where the
 * lock order allows (see the header). A run of candidates on one provider
 * each (every candidate of a flat cloud) is locked by one statement that
 * takes the first of their providers nobody else holds, so K claimers packing
 * the same hosts pay one round trip, not one per busy host, to find a free one.
 */
async function placeOne(
  tx: Tx,
  found: CollectedAnswer,
  view: CandidateView,
  consumer: LockedConsumer,
  held: Held,
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
  const ordered = new Lookahead(view.ordered());
  for (let c = ordered.peek(); c !== undefined; c = ordered.peek()) {
    if (onOneProvider(c)) {
      const taken = await firstFree(tx, found, consumer, ordered, held, busy, outcome);
      if (taken) return { candidate: taken, stale };
      continue;
    }
    ordered.next();
    const a = await attempt(tx, found, consumer, c, "skip", held);
    if (outcome(c, a)) return { candidate: c, stale };
    if (a === "busy") busy.push(c);
  }
  let mustRestart = false;
  for (const c of busy) {
    if (!view.fits(c)) continue;
    const waitable = c.resources.every((r) => r.providerId > held.highest);
    const a = await attempt(tx, found, consumer, c, waitable ? "wait" : "skip", held);
    if (outcome(c, a)) return { candidate: c, stale };
    if (a === "busy") mustRestart = true;
  }
  if (mustRestart) throw new MustRestart();
  return { stale };
}

/** An iterator that can be looked into one step ahead. */
class Lookahead<T> {
  private head: IteratorResult<T, void> | undefined;

  constructor(private readonly it: Iterator<T, void>) {}

  peek(): T | undefined {
    this.head ??= this.it.next();
    return this.head.done ? undefined : this.head.value;
  }

  next(): T | undefined {
    const value = this.peek();
    this.head = undefined;
    return value;
  }
}

/**
 * The run of candidates on one provider each that `ordered` starts with,
 * best first: lock the first of their providers that nobody else holds and
 * that has room in the statement's snapshot (lockFirstFree: one statement per
 * FIRST_FREE_BATCH providers, taken from the run as it goes; SKIP LOCKED, so
 * it never waits), try its candidates, and go on past it while none fits.
 * Those whose provider was skipped as held by another writer go to `busy`;
 * those passed over as full are refused (the answer was stale). Returns with
 * the run consumed, or with the candidate claimed.
 */
async function firstFree(
  tx: Tx,
  found: CollectedAnswer,
  consumer: LockedConsumer,
  ordered: Lookahead<Candidate>,
  held: Held,
  busy: Candidate[],
  outcome: (c: Candidate, a: Attempt) => boolean,
): Promise<Candidate | undefined> {
  const skipped = new Set<number>();
  let window: Candidate[] = [];
  for (;;) {
    const ids = [...new Set(window.map(providerOf))];
    for (let c = ordered.peek(); ids.length < FIRST_FREE_BATCH && c !== undefined && onOneProvider(c); c = ordered.peek()) {
      ordered.next();
      if (skipped.has(providerOf(c))) busy.push(c);
      else {
        if (!window.some((w) => providerOf(w) === providerOf(c))) ids.push(providerOf(c));
        window.push(c);
      }
    }
    if (window.length === 0) return undefined;
    const { row, full } = await lockFirstFree(tx, ids, window);
    heldNow(held, row ? [row] : []);
    const passed = row ? ids.slice(0, ids.indexOf(row.id)) : ids;
    for (const id of passed) if (!full.has(id)) skipped.add(id);
    busy.push(...window.filter((c) => skipped.has(providerOf(c))));
    // Filled since the answer, by the statement's snapshot: passed over without a lock, as stale.
    const filled = window.filter((c) => full.has(providerOf(c)) && passed.includes(providerOf(c)));
    for (const c of filled) outcome(c, "refused");
    if (row) {
      for (const c of window.filter((c) => providerOf(c) === row.id)) {
        if (outcome(c, await write(tx, found, consumer, c, [row.id], held))) return c;
      }
    }
    window = window.filter((c) => !skipped.has(providerOf(c)) && !filled.includes(c) && providerOf(c) !== row?.id);
  }
}

/**
 * Locks the first of `ids` (in their order) that has room for one of its
 * candidates of `window` in the statement's snapshot and that no other
 * writer holds (SKIP LOCKED); `full` names those of `ids` with room for
 * none. A host the answer had room on but later commits filled is so passed
 * over without a lock: locked, it would be refused under the lock and held
 * until the transaction ends, and other claimers would find it busy. The
 * check is only a hint, as in claims-statement.ts: write() checks the locked
 * rows. Rows this transaction holds already are not skipped: they come back
 * first if they come first, and its own writes count in the snapshot.
 */
async function lockFirstFree(
  tx: Tx,
  ids: number[],
  window: readonly Candidate[],
): Promise<{ row?: { id: number; generation: number }; full: Set<number> }> {
  // Each resource of each candidate (all on `ids`), with the candidate's place in `window`.
  const offered = window.flatMap((c, i) => c.resources.map((r) => ({ candidate: i, ...r })));
  const res = await executePrepared<{ id: number | null; generation: number | null; full: number[] }>(tx, sql`
    WITH offered AS MATERIALIZED (
      SELECT * FROM unnest(${sql.param(offered.map((r) => r.candidate))}::int[], ${sql.param(offered.map((r) => r.providerId))}::int[],
                           ${sql.param(offered.map((r) => r.resourceClassId))}::int[], ${sql.param(offered.map((r) => r.amount))}::bigint[])
        AS o(candidate, provider_id, class_id, used)
    ), w AS MATERIALIZED (
      SELECT w.id, w.place, EXISTS (
        SELECT FROM offered c WHERE c.provider_id = w.id AND NOT EXISTS (SELECT FROM ${sql.raw(offersWithoutRoomSql("o.candidate = c.candidate"))})) AS fits
      FROM unnest(${sql.param(ids)}::int[]) WITH ORDINALITY AS w(id, place)
    ), chosen AS MATERIALIZED (
      SELECT rp.id, rp.generation FROM w JOIN resource_providers rp ON rp.id = w.id WHERE w.fits
      ORDER BY w.place LIMIT 1 FOR NO KEY UPDATE OF rp SKIP LOCKED
    )
    SELECT (SELECT id FROM chosen) AS id, (SELECT generation FROM chosen) AS generation, ARRAY(SELECT id FROM w WHERE NOT fits) AS full`,
    "pl_claim_first_free_provider");
  const { id, generation, full } = res.rows[0];
  return { row: id === null ? undefined : { id, generation: generation! }, full: new Set(full) };
}

/** Locks the candidate's providers (all of them, in id order), then writes it if it fits under the locks. */
async function attempt(tx: Tx, found: CollectedAnswer, consumer: LockedConsumer, c: Candidate, lock: "skip" | "wait", held: Held): Promise<Attempt> {
  const providerIds = [...new Set(c.resources.map((r) => r.providerId))];
  const res = await executePrepared<{ id: number; generation: number }>(tx, sql`
    SELECT id, generation FROM resource_providers WHERE id = ANY(${sql.param(providerIds)}::int[])
    ORDER BY id FOR NO KEY UPDATE ${lock === "skip" ? sql`SKIP LOCKED` : sql``}`, "pl_claim_lock_candidate");
  heldNow(held, res.rows);
  // Waiting, a missing row is a provider deleted since the answer: this candidate no longer fits.
  if (res.rows.length < providerIds.length) return lock === "wait" ? "refused" : "busy";
  return write(tx, found, consumer, c, providerIds, held);
}

function heldNow(held: Held, rows: ReadonlyArray<{ id: number; generation: number }>): void {
  for (const row of rows) {
    held.generations.set(row.id, row.generation);
    held.highest = Math.max(held.highest, row.id);
  }
}

/**
 * The consumer's allocation of `c`, whose providers this transaction holds:
 * one statement, which writes nothing when `c` no longer fits, so neither
 * outcome leaves the transaction unusable.
 */
async function write(tx: Tx, found: CollectedAnswer, consumer: LockedConsumer, c: Candidate, providerIds: number[], held: Held): Promise<Attempt> {
  const classIds = new Map(c.resources.map((r) => [found.resourceClassName(r.resourceClassId), r.resourceClassId]));
  try {
    await writeWithinCapacity(
      tx,
      c.resources.map((r) => ({
        consumerId: consumer.id,
        providerId: r.providerId,
        providerUuid: found.uuidOf(r.providerId),
        className: found.resourceClassName(r.resourceClassId),
        classId: r.resourceClassId,
        used: r.amount,
      })),
      [],
      classIds,
      providerIds.map((id) => ({ id, uuid: found.uuidOf(id) })),
      [consumer],
    );
  } catch (err) {
    // The capacity rule's refusal (someone took the room, or the inventory went, since the answer): nothing was written.
    if (err instanceof CapacityExceeded) return "refused";
    throw err;
  }
  for (const id of providerIds) held.generations.set(id, held.generations.get(id)! + 1);
  return "claimed";
}

function allocationRequest(found: CollectedAnswer, c: Candidate): AllocationRequest {
  const allocations: Record<string, Resources> = {};
  for (const r of c.resources) (allocations[found.uuidOf(r.providerId)] ??= {})[found.resourceClassName(r.resourceClassId)] = r.amount;
  const mappings: Record<string, string[]> = {};
  for (const g of c.groups) mappings[g.suffix] = g.providers.map((id) => found.uuidOf(id));
  return { allocations, mappings };
}
