/**
 * The requests and summaries of a flat answer
 * (services/candidates/flat-answer.ts), for FastRenderer: every candidate is
 * one provider taking every group's resources (amounts of a class added up,
 * classes in order of first mention), so each allocation request is one
 * template per request with the provider's uuid put in.
 *
 * Written as bytes from pieces kept per provider in the render cache
 * (cache.ts): its whole allocation request for the last request template,
 * and its whole summary for the last summary form (microversion and
 * requested classes) and the usage it was written with: a provider then
 * costs one copy for its request and one for its summary, where written
 * from small pieces (a quoted uuid, `"NAME":{"capacity":N,"used":`, braces
 * and commas) it costs a call each. A summary is written by the one summary writer (summaries.ts)
 * the first time, and again when the cloud view replaces the provider's
 * usage (under a scheduling loop, one provider per claim), and its bytes are
 * kept. The pieces are kept on the details object the cloud view keeps
 * (KeptDetails in cloud-view.ts, a type only the view makes), which it
 * replaces when the provider's capacities or traits change, and tagged with
 * the class names they were made with (a class renamed before 1.7 renames
 * them). The requests are written without escaping: the API writes uuids in
 * canonical form and names of [A-Z0-9_]+. A row written around the API may
 * hold anything; an answer with a provider or a class name that would need
 * escaping is declined here (FastRenderer gives it to the plain renderer),
 * checked once per details object and per naming.
 */
import { ascii, type BodyWriter } from "../../http/body-writer.js";
import type { CandidatesQuery } from "../../query/request-groups.js";
import type { FlatAnswer } from "../../services/candidates/flat-answer.js";
import type { AnswerShape } from "../../services/candidates/answer-shape.js";
import type { FlatAnchor } from "../../services/candidates/flat-answer.js";
import type { FlatProvider, RenderCache, UuidArena } from "./cache.js";
import { COMMA, REQUESTS_OPEN, SUMMARIES_OPEN } from "./pieces.js";
import type { SummaryInventory, SummaryWriter } from "./summaries.js";

/** The usage of `classId` in [classId, used, ...] pairs (a provider has a handful of inventories). */
function usageOf(pairs: readonly number[], classId: number): number {
  for (let i = 0; i < pairs.length; i += 2) if (pairs[i] === classId) return pairs[i + 1];
  return 0;
}

/** Every class id and name, as one string: equal strings, equal names. */
const namingOf = (classNames: Map<number, string>): string => [...classNames].join(";");

/** The text of one allocation request, around the place where the provider's quoted uuid goes (each place). */
function requestTemplate(shape: AnswerShape, query: CandidatesQuery, amounts: Map<string, number>): string[] {
  const resources = `{"resources":{${[...amounts].map(([rc, n]) => `${JSON.stringify(rc)}:${n}`).join(",")}}}`;
  if (!shape.dictForm) return ['{"allocations":[{"resource_provider":{"uuid":', `},${resources.slice(1)}]}`];
  if (!shape.mappings) return ['{"allocations":{', `:${resources}}}`];
  const [first, ...rest] = query.groups.map((g) => `${JSON.stringify(g.suffix)}:[`);
  return ['{"allocations":{', `:${resources}},"mappings":{${first}`, ...rest.map((m) => `],${m}`), "]}}"];
}

/** The summary form: which parts a summary shows (before 1.27 only the requested classes). */
function summaryForm(shape: AnswerShape, requestedIds: Set<number | undefined>): string {
  return `${shape.allClasses ? "*" : [...requestedIds].join(",")}|${shape.traits ? "t" : ""}|${shape.tree ? "r" : ""}`;
}


/**
 * Writes the answer's allocation requests and summaries into `w`, from
 * `{"allocation_requests":[` to the summaries' last byte (the body's
 * closing is the caller's). False, with nothing written, when a uuid, a
 * trait or a class name would need escaping.
 */
export function writeFlatAnswer(
  w: BodyWriter,
  shape: AnswerShape,
  query: CandidatesQuery,
  answer: FlatAnswer,
  cache: RenderCache,
  arena: UuidArena,
  summaries: SummaryWriter,
): boolean {
  const { anchors, classNames, names } = answer;
  const amounts = new Map<string, number>();
  for (const g of query.groups) for (const [rc, amount] of g.resources) amounts.set(rc, (amounts.get(rc) ?? 0) + amount);
  const template = requestTemplate(shape, query, amounts);
  const templateKey = cache.canonical(template.join("\n"));
  // Before 1.27 summaries show only the requested classes.
  const requestedIds = new Set([...amounts.keys()].map((name) => names.resourceClasses.get(name)));
  const form = cache.canonical(summaryForm(shape, requestedIds));
  const naming = cache.canonical(namingOf(classNames));

  const providers: FlatProvider[] = new Array(anchors.length);
  let plain = cache.plainNaming(naming, classNames);
  for (let i = 0; i < anchors.length; i++) if (!(providers[i] = cache.flatProvider(anchors[i].details, naming)).plain) plain = false;
  if (!plain) return false;

  w.bytes(REQUESTS_OPEN);
  for (let i = 0; i < anchors.length; i++) {
    const p = providers[i];
    if (p.request?.template !== templateKey) {
      const uuid = `"${anchors[i].details.uuid}"`;
      p.request = { template: templateKey, bytes: ascii(template.join(uuid)) };
    }
    if (i > 0) w.bytes(COMMA);
    w.bytes(p.request.bytes);
  }
  w.bytes(SUMMARIES_OPEN);
  const className = (id: number) => classNames.get(id)!;
  for (let i = 0; i < anchors.length; i++) {
    if (i > 0) w.bytes(COMMA);
    const p = providers[i];
    const anchor = anchors[i];
    const kept = p.summary;
    if (kept !== undefined && kept.form === form && kept.used === anchor.used) {
      w.bytes(kept.bytes);
      continue;
    }
    // Written in place, then kept as a copy of what was written (unless it fell across two chunks).
    const chunk = w.chunk;
    const start = w.offset;
    const slot = arena.of(anchor.id, anchor.details.uuid);
    summaries.write(w, slot, summaryInventories(anchor), splitTraits(anchor.details.traits), null, slot, className);
    p.summary = w.chunk === chunk ? { form, used: anchor.used, bytes: Buffer.from(chunk.subarray(start, w.offset)) } : undefined;
  }
  return true;
}

/** The anchor's inventories with their usage, in class id order. */
function summaryInventories({ details, used }: FlatAnchor): SummaryInventory[] {
  const out: SummaryInventory[] = [];
  for (let i = 0; i < details.inventories.length; i += 2) {
    const resourceClassId = details.inventories[i];
    out.push({ resourceClassId, capacity: details.inventories[i + 1], used: used === undefined ? 0 : usageOf(used, resourceClassId) });
  }
  return out;
}

const splitTraits = (traits: string): string[] => (traits === "" ? [] : traits.split(" "));
