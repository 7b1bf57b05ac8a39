/**
 * The body of a flat answer (services/candidates/flat-answer.ts): every
 * candidate is one provider taking every group's resources (amounts of a
 * class added up, classes in order of first mention), so each allocation
 * request is one template per request with the provider's uuid put in.
 *
 * Written as bytes (BodyWriter) from pieces kept per provider: its whole
 * allocation request for the last request template, and its summary as the
 * pieces between its usage numbers for the last summary form (microversion
 * and requested classes). Writing the body was the largest part of the
 * server's own CPU time for a flat answer in CPU profiles, most of it spent
 * copying many small pieces (a quoted uuid, `"NAME":{"capacity":N,"used":`,
 * braces and commas) one call each; kept whole, a provider costs one copy
 * for its request and one for its summary. A summary is kept with the usage
 * it was written with and made again from its pieces (the text between its
 * usage numbers) when the cloud view replaces the provider's usage, which
 * under a scheduling loop is one provider per claim. The pieces are kept
 * (FlatBodyPieces, one per app) on the details object the cloud view keeps
 * (KeptDetails in cloud-view.ts, a type only the view makes), which it
 * replaces when the provider's capacities or traits change, and tagged with the class names they were made with (a class
 * renamed before 1.7 renames them). The pieces are written without
 * escaping: the API writes uuids in canonical form and names of
 * [A-Z0-9_]+. A row written around the API may hold anything; an answer
 * with a provider or a class name that would need escaping is written by the
 * plain renderer instead (reference.ts), checked once per details object and
 * per naming. A flat answer is bounded by the number of providers, so it is
 * never streamed.
 */
import { ascii, type BodyWriter } from "../../http/body-writer.js";
import type { CandidatesQuery } from "../../query/request-groups.js";
import type { FlatAnswer } from "../../services/candidates/flat-answer.js";
import type { KeptDetails, ProviderDetails } from "../../services/candidates/cloud-view.js";
import { BODY_CLOSE, COMMA, REQUESTS_OPEN, SUMMARIES_OPEN } from "./pieces.js";
import { answerText, flatAnswer } from "./reference.js";
import type { AnswerShape } from "../../services/candidates/answer-shape.js";

interface EncodedProvider {
  /** Which class names the pieces spell (see namingOf). */
  naming: string;
  /** Its uuid and trait names can be written between quotes as they are (see PLAIN). */
  plain: boolean;
  quotedUuid: Buffer;
  /** The provider's allocation request for the last request template it was written with. */
  request?: { template: string; bytes: Buffer };
  /** The provider's summary pieces for the last summary form they were made for. */
  summary?: SummaryPieces;
}

/**
 * A provider's summary as the pieces between its usage numbers: `parts[0]`,
 * the usage of `classIds[0]`, `parts[1]`, ..., `parts[classIds.length]`.
 * Only usage changes without the provider changing, so everything else is
 * one copy per inventory.
 */
interface SummaryPieces {
  form: string;
  parts: Buffer[];
  classIds: number[];
  /** The whole summary with the usage it was last written with (the cloud view replaces `used` when the usage changes). */
  whole?: { used: readonly number[] | undefined; bytes: Buffer };
}

/** The encoded pieces of each provider's details (one per app; entries go with the details objects). */
export class FlatBodyPieces {
  private readonly encoded = new WeakMap<KeptDetails, EncodedProvider>();
  /**
   * One string object per distinct naming, template and form, so checking
   * each provider's kept pieces against them compares pointers: equal
   * strings made afresh for every request were compared character by
   * character, three times per provider per answer.
   */
  private readonly texts = new Map<string, string>();
  /** Whether each kept naming's class names are PLAIN (the keys are the kept strings of `texts`). */
  private readonly plainNamings = new Map<string, boolean>();

  /** Whether the class names of `naming` (a kept string) are PLAIN. */
  plainNaming(naming: string, classNames: Map<number, string>): boolean {
    let plain = this.plainNamings.get(naming);
    if (plain === undefined) {
      if (this.plainNamings.size >= 256) this.plainNamings.clear();
      this.plainNamings.set(naming, (plain = [...classNames.values()].every((name) => PLAIN.test(name))));
    }
    return plain;
  }

  /** The kept string equal to `text` (itself the first time). */
  canonical(text: string): string {
    let kept = this.texts.get(text);
    if (kept === undefined) {
      // A handful in practice; the bound only keeps the map from growing without end.
      if (this.texts.size >= 256) this.texts.clear();
      this.texts.set(text, (kept = text));
    }
    return kept;
  }

  of(details: KeptDetails, naming: string): EncodedProvider {
    const kept = this.encoded.get(details);
    if (kept && kept.naming === naming) return kept;
    const made: EncodedProvider = { naming, plain: PLAIN.test(details.uuid) && PLAIN.test(details.traits), quotedUuid: ascii(`"${details.uuid}"`) };
    this.encoded.set(details, made);
    return made;
  }
}

/** Printable ASCII but the quote and the backslash: text JSON writes between quotes as it is, one byte a character. */
const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

const ZERO = ascii("0");

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

function summaryPieces(form: string, shape: AnswerShape, details: ProviderDetails, quotedUuid: string, requestedIds: Set<number | undefined>, classNames: Map<number, string>): SummaryPieces {
  const parts: string[] = [];
  const classIds: number[] = [];
  let open = `${quotedUuid}:{"resources":{`;
  for (let i = 0; i < details.inventories.length; i += 2) {
    const classId = details.inventories[i];
    const capacity = details.inventories[i + 1];
    if (!shape.allClasses && !requestedIds.has(classId)) continue;
    parts.push(`${open}${classIds.length > 0 ? "," : ""}${JSON.stringify(classNames.get(classId))}:{"capacity":${capacity},"used":`);
    classIds.push(classId);
    open = "}";
  }
  let close = `${open}}`;
  if (shape.traits) close += `,"traits":${details.traits === "" ? "[]" : `["${details.traits.replaceAll(" ", '","')}"]`}`;
  if (shape.tree) close += `,"parent_provider_uuid":null,"root_provider_uuid":${quotedUuid}`;
  parts.push(`${close}}`);
  return { form, parts: parts.map(ascii), classIds };
}

/** A summary with its usage numbers filled in. */
function wholeSummary({ parts, classIds }: SummaryPieces, used: readonly number[] | undefined): Buffer {
  const pieces: Buffer[] = [parts[0]];
  for (let j = 0; j < classIds.length; j++) {
    const n = used === undefined ? 0 : usageOf(used, classIds[j]);
    pieces.push(n === 0 ? ZERO : ascii(String(n)), parts[j + 1]);
  }
  return Buffer.concat(pieces);
}

/** The body, written by `w` (made to hold about 512 bytes per candidate). */
export function renderFlatBody(w: BodyWriter, shape: AnswerShape, query: CandidatesQuery, answer: FlatAnswer, pieces: FlatBodyPieces): Buffer<ArrayBuffer> {
  const { anchors, classNames, names } = answer;
  const amounts = new Map<string, number>();
  for (const g of query.groups) for (const [rc, amount] of g.resources) amounts.set(rc, (amounts.get(rc) ?? 0) + amount);
  const template = requestTemplate(shape, query, amounts);
  const templateKey = pieces.canonical(template.join("\n"));
  // Before 1.27 summaries show only the requested classes.
  const requestedIds = new Set([...amounts.keys()].map((name) => names.resourceClasses.get(name)));
  const form = pieces.canonical(summaryForm(shape, requestedIds));
  const naming = pieces.canonical(namingOf(classNames));

  const providers: EncodedProvider[] = new Array(anchors.length);
  let plain = pieces.plainNaming(naming, classNames);
  for (let i = 0; i < anchors.length; i++) if (!(providers[i] = pieces.of(anchors[i].details, naming)).plain) plain = false;
  if (!plain) {
    const { requests, summaries } = flatAnswer(shape, query, answer);
    return w.bytes(Buffer.from(answerText(requests, summaries), "utf8")).within().finish();
  }

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
  for (let i = 0; i < anchors.length; i++) {
    const { details, used } = anchors[i];
    const p = providers[i];
    if (p.summary?.form !== form) p.summary = summaryPieces(form, shape, details, `"${details.uuid}"`, requestedIds, classNames);
    const summary = p.summary;
    if (summary.whole === undefined || summary.whole.used !== used) summary.whole = { used, bytes: wholeSummary(summary, used) };
    if (i > 0) w.bytes(COMMA);
    w.bytes(summary.whole.bytes);
  }
  return w.bytes(BODY_CLOSE).within().finish();
}
