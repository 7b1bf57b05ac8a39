/**
 * The body of a flat answer (services/candidates/flat-statement.ts): every
 * candidate is one provider taking every group's resources (amounts of a
 * class added up, classes in order of first mention), so each allocation
 * request is one template per request with the provider's uuid put in.
 *
 * Written as bytes (BodyWriter): each provider's quoted uuid, its inventories'
 * `"NAME":{"capacity":N,"used":` and its traits are encoded once and copied
 * into every answer that shows the provider, until the provider changes:
 * rendering and encoding one string per answer cost several times more than
 * copying pieces. The pieces are kept (FlatBodyPieces, one per app) on the
 * details object provider-details.ts keeps, which it replaces when the
 * provider changes, and tagged with the class names they were made with (a
 * class renamed before 1.7 renames them). Usage is written for each answer.
 * Uuids come from the database in canonical form and names are [A-Z0-9_]+,
 * so no piece needs escaping. A flat answer is bounded by the number of
 * providers, so it is never streamed.
 */
import { ascii, BodyWriter } from "../http/body-writer.js";
import type { CandidatesQuery } from "../query/request-groups.js";
import type { FlatAnswer } from "../services/candidates/flat-statement.js";
import type { ProviderDetails } from "../services/candidates/provider-details.js";
import { BODY_CLOSE, COMMA, REQUESTS_OPEN, SUMMARIES_OPEN, type ResponseShape } from "./candidates-shape.js";

interface EncodedProvider {
  /** Which class names the inventory pieces spell (see namingOf). */
  naming: string;
  quotedUuid: Buffer;
  /** `"NAME":{"capacity":N,"used":` per inventory, in the details' order. */
  inventories: Buffer[];
  /** The traits as a JSON array. */
  traits: Buffer;
}

/** The encoded pieces of each provider's details (one per app; entries go with the details objects). */
export class FlatBodyPieces {
  private readonly encoded = new WeakMap<ProviderDetails, EncodedProvider>();

  of(details: ProviderDetails, naming: string, classNames: Map<number, string>): EncodedProvider {
    const kept = this.encoded.get(details);
    if (kept && kept.naming === naming) return kept;
    const made: EncodedProvider = {
      naming,
      quotedUuid: ascii(`"${details.uuid}"`),
      inventories: details.inventories.map(([classId, capacity]) => ascii(`${JSON.stringify(classNames.get(classId))}:{"capacity":${capacity},"used":`)),
      traits: ascii(details.traits === "" ? "[]" : `["${details.traits.replaceAll(" ", '","')}"]`),
    };
    this.encoded.set(details, made);
    return made;
  }
}

const ZERO = ascii("0");
const CLOSE = ascii("}");
const RESOURCES_OPEN = ascii(':{"resources":{');
const TRAITS_KEY = ascii(',"traits":');
const TREE_KEYS = ascii(',"parent_provider_uuid":null,"root_provider_uuid":');

/** Every class id and name, as one string: equal strings, equal names. */
const namingOf = (classNames: Map<number, string>): string => [...classNames].join(";");

/** Pieces of one allocation request between which the quoted uuid goes. */
function requestTemplate(shape: ResponseShape, query: CandidatesQuery, amounts: Map<string, number>): Buffer[] {
  const resources = `{"resources":{${[...amounts].map(([rc, n]) => `${JSON.stringify(rc)}:${n}`).join(",")}}}`;
  if (!shape.dictForm) return ['{"allocations":[{"resource_provider":{"uuid":', `},${resources.slice(1)}]}`].map(ascii);
  if (!shape.mappings) return ['{"allocations":{', `:${resources}}}`].map(ascii);
  const [first, ...rest] = query.groups.map((g) => `${JSON.stringify(g.suffix)}:[`);
  return ['{"allocations":{', `:${resources}},"mappings":{${first}`, ...rest.map((m) => `],${m}`), "]}}"].map(ascii);
}

export function renderFlatBody(shape: ResponseShape, query: CandidatesQuery, { anchors, classNames, names }: FlatAnswer, pieces: FlatBodyPieces): Buffer<ArrayBuffer> {
  const amounts = new Map<string, number>();
  for (const g of query.groups) for (const [rc, amount] of g.resources) amounts.set(rc, (amounts.get(rc) ?? 0) + amount);
  const template = requestTemplate(shape, query, amounts);
  // Before 1.27 summaries show only the requested classes.
  const requestedIds = new Set([...amounts.keys()].map((name) => names.resourceClasses.get(name)));
  const naming = namingOf(classNames);
  const providers = anchors.map((a) => pieces.of(a.details, naming, classNames));

  const w = new BodyWriter(1024 + anchors.length * 512);
  w.bytes(REQUESTS_OPEN);
  for (let i = 0; i < anchors.length; i++) {
    if (i > 0) w.bytes(COMMA);
    w.bytes(template[0]);
    for (let k = 1; k < template.length; k++) w.bytes(providers[i].quotedUuid).bytes(template[k]);
  }
  w.bytes(SUMMARIES_OPEN);
  for (let i = 0; i < anchors.length; i++) {
    const { details, used } = anchors[i];
    const p = providers[i];
    if (i > 0) w.bytes(COMMA);
    w.bytes(p.quotedUuid).bytes(RESOURCES_OPEN);
    let first = true;
    for (let j = 0; j < details.inventories.length; j++) {
      const classId = details.inventories[j][0];
      if (!shape.allClasses && !requestedIds.has(classId)) continue;
      if (!first) w.bytes(COMMA);
      first = false;
      const n = used?.get(classId) ?? 0;
      w.bytes(p.inventories[j]);
      if (n === 0) w.bytes(ZERO);
      else w.ascii(String(n));
      w.bytes(CLOSE);
    }
    w.bytes(CLOSE);
    if (shape.traits) w.bytes(TRAITS_KEY).bytes(p.traits);
    if (shape.tree) w.bytes(TREE_KEYS).bytes(p.quotedUuid);
    w.bytes(CLOSE);
  }
  return w.bytes(BODY_CLOSE).finish();
}
