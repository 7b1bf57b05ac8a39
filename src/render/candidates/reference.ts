/**
 * The plain renderer of an allocation candidates answer: the answer built as
 * data (a Map for each JSON object, so keys keep the order the answer gives
 * them) and serialized at the end with JSON.stringify for every name and
 * number. It keeps nothing between answers and assumes nothing of its input
 * (no kept pieces, no unescaped names, no object identity), so it is the
 * oracle the fast renderers (body.ts, candidate-writer.ts, flat-body.ts) are
 * compared with byte for byte: test/candidates/contract.test.ts runs every
 * answer path through both, at every microversion's shape.
 *
 * Maps rather than plain objects: a request group's suffix may be all digits
 * (`resources1`), and a JavaScript object lists such keys first, where
 * Placement keeps the groups' order.
 */
import type { CandidatesQuery } from "../../query/request-groups.js";
import type { AnswerShape } from "../../services/candidates/answer-shape.js";
import type { Candidate } from "../../services/candidates/combine.js";
import type { FlatAnswer } from "../../services/candidates/flat-answer.js";
import type { CandidatesResult, NamesById } from "../../services/candidates/generate.js";
import type { BodyWriter } from "../../http/body-writer.js";
import type { AnswerLengths } from "../../services/candidates/answer-bound.js";
import { answerLengths } from "./lengths.js";
import type { CandidatesRenderer } from "./renderer.js";

/** A JSON value whose objects are Maps (in key order). */
type Json = string | number | null | Json[] | Map<string, Json>;

/** `value` as JSON text: Maps as objects in their order, everything else by JSON.stringify. */
export function stringify(value: Json): string {
  if (value instanceof Map) return `{${[...value].map(([key, v]) => `${JSON.stringify(key)}:${stringify(v)}`).join(",")}}`;
  if (Array.isArray(value)) return `[${value.map(stringify).join(",")}]`;
  return JSON.stringify(value);
}

/** One allocation request: providers in order of first appearance, each with its classes in the candidate's order. */
function allocationRequest(shape: AnswerShape, cand: Candidate, names: NamesById): Map<string, Json> {
  const byProvider = new Map<number, Map<string, Json>>();
  for (const rr of cand.resources) {
    let resources = byProvider.get(rr.providerId);
    if (resources === undefined) byProvider.set(rr.providerId, (resources = new Map()));
    resources.set(names.resourceClassName(rr.resourceClassId), rr.amount);
  }
  const mappings = new Map<string, Json>(cand.groups.map((option) => [option.suffix, option.providers.map((id) => names.uuidOf(id))]));
  return request(
    shape,
    [...byProvider].map(([id, resources]) => [names.uuidOf(id), resources]),
    mappings,
  );
}

function request(shape: AnswerShape, allocations: Array<[string, Map<string, Json>]>, mappings: Map<string, Json>): Map<string, Json> {
  if (!shape.dictForm) {
    const list = allocations.map(([uuid, resources]): Json => new Map<string, Json>([["resource_provider", new Map([["uuid", uuid]])], ["resources", resources]]));
    return new Map([["allocations", list]]);
  }
  const out = new Map<string, Json>([["allocations", new Map(allocations.map(([uuid, resources]) => [uuid, new Map([["resources", resources]])]))]]);
  if (shape.mappings) out.set("mappings", mappings);
  return out;
}

interface SummaryInput {
  uuid: string;
  /** Class name, capacity and usage of each inventory, in class id order. */
  inventories: Array<{ name: string; capacity: number; used: number }>;
  traits: string[];
  parentUuid: string | null;
  rootUuid: string;
}

/** One provider summary (before 1.27 only the requested classes, traits from 1.17, parent and root from 1.29). */
function summary(shape: AnswerShape, requested: ReadonlySet<string>, p: SummaryInput): Map<string, Json> {
  const resources = new Map<string, Json>();
  for (const inv of p.inventories) {
    if (!shape.allClasses && !requested.has(inv.name)) continue;
    resources.set(
      inv.name,
      new Map<string, Json>([
        ["capacity", inv.capacity],
        ["used", inv.used],
      ]),
    );
  }
  const out = new Map<string, Json>([["resources", resources]]);
  if (shape.traits) out.set("traits", p.traits);
  if (shape.tree) {
    out.set("parent_provider_uuid", p.parentUuid);
    out.set("root_provider_uuid", p.rootUuid);
  }
  return out;
}

const requestedClasses = (query: CandidatesQuery): Set<string> => new Set(query.groups.flatMap((g) => [...g.resources.keys()]));

/** The summaries of the engine's result, in its order. */
function engineSummaries(shape: AnswerShape, query: CandidatesQuery, r: CandidatesResult): Map<string, Json> {
  const requested = requestedClasses(query);
  const out = new Map<string, Json>();
  for (const { provider, inventories, traits } of r.summaries) {
    const uuid = r.uuidOf(provider.id);
    out.set(
      uuid,
      summary(shape, requested, {
        uuid,
        inventories: inventories.map((inv) => ({ name: r.resourceClassName(inv.resourceClassId), capacity: inv.capacity, used: inv.used })),
        traits,
        parentUuid: provider.parentId === null ? null : r.uuidOf(provider.parentId),
        rootUuid: r.uuidOf(provider.rootId),
      }),
    );
  }
  return out;
}

/**
 * A flat answer's requests and summaries: each candidate one provider
 * taking every group's resources (a class's amounts added up, classes in
 * order of first mention), mapped from every group; each provider its own
 * root.
 */
function flatAnswer(shape: AnswerShape, query: CandidatesQuery, answer: FlatAnswer): { requests: Json[]; summaries: Map<string, Json> } {
  const amounts = new Map<string, Json>();
  for (const g of query.groups) for (const [rc, amount] of g.resources) amounts.set(rc, ((amounts.get(rc) as number | undefined) ?? 0) + amount);
  const requested = requestedClasses(query);
  const requests: Json[] = [];
  const summaries = new Map<string, Json>();
  for (const { details, used } of answer.anchors) {
    const uuid = details.uuid;
    requests.push(request(shape, [[uuid, amounts]], new Map(query.groups.map((g) => [g.suffix, [uuid]]))));
    const inventories: SummaryInput["inventories"] = [];
    for (let i = 0; i < details.inventories.length; i += 2) {
      const classId = details.inventories[i];
      let usage = 0;
      for (let j = 0; used !== undefined && j < used.length; j += 2) if (used[j] === classId) usage = used[j + 1];
      inventories.push({ name: answer.classNames.get(classId) ?? String(classId), capacity: details.inventories[i + 1], used: usage });
    }
    const traits = details.traits === "" ? [] : details.traits.split(" ");
    summaries.set(uuid, summary(shape, requested, { uuid, inventories, traits, parentUuid: null, rootUuid: uuid }));
  }
  return { requests, summaries };
}

/** The whole body of an answer's requests and summaries. */
const answerText = (requests: Json[], summaries: Map<string, Json>): string =>
  stringify(
    new Map<string, Json>([
      ["allocation_requests", requests],
      ["provider_summaries", summaries],
    ]),
  );

/**
 * The plain renderer (CandidatesRenderer): the answer collected as data,
 * and written whole into the body at finish.
 */
export class ReferenceRenderer implements CandidatesRenderer {
  private w?: BodyWriter;
  private requests: Json[] = [];
  private summaryMap = new Map<string, Json>();

  constructor(
    private readonly shape: AnswerShape,
    private readonly query: CandidatesQuery,
  ) {}

  open(w: BodyWriter): void {
    this.w = w;
    this.requests = [];
    this.summaryMap = new Map();
  }

  candidate(cand: Candidate, names: NamesById): void {
    this.requests.push(allocationRequest(this.shape, cand, names));
  }

  summaries(result: CandidatesResult): void {
    this.summaryMap = engineSummaries(this.shape, this.query, result);
  }

  flat(answer: FlatAnswer): void {
    ({ requests: this.requests, summaries: this.summaryMap } = flatAnswer(this.shape, this.query, answer));
  }

  finish(): void {
    this.w!.bytes(Buffer.from(answerText(this.requests, this.summaryMap), "utf8"));
    this.w = undefined;
    this.requests = [];
    this.summaryMap = new Map();
  }

  lengths(): AnswerLengths {
    return answerLengths(this.shape, this.query);
  }
}
