/**
 * The body of a general answer (services/candidates/engine.ts): each
 * allocation request is written as bytes the moment the engine finds it, then
 * the summaries. See BodyWriter for why bytes: a huge answer (80,000 nested
 * candidates, 54 MB) kept as strings until the end grew the heap to hundreds
 * of MB; written as it comes, each piece is garbage at once and the bytes
 * leave in 64 KB chunks.
 */
import { ascii, BodyWriter } from "../http/body-writer.js";
import type { CandidatesQuery } from "../query/request-groups.js";
import type { Candidate } from "../services/candidates/combine.js";
import type { CandidatesResult } from "../services/candidates/engine.js";
import type { Names } from "../services/candidates/generate.js";
import { BODY_CLOSE, COMMA, REQUESTS_OPEN, SUMMARIES_OPEN, type ResponseShape } from "./candidates-shape.js";

export class CandidatesBody {
  private readonly w = new BodyWriter().bytes(REQUESTS_OPEN);
  /** Each provider's uuid as a quoted JSON string, encoded once per response. */
  private readonly quoted = new Map<number, Buffer>();
  private readonly writeOne: (cand: Candidate, names: Names) => void;
  private count = 0;

  constructor(private readonly shape: ResponseShape) {
    this.writeOne = candidateWriter(this.w, shape, this.quotedUuid);
  }

  /** Allocation requests written so far. */
  get written(): number {
    return this.count;
  }

  /** Writes one allocation request (a field, so the engine can take it as its callback). */
  readonly candidate = (cand: Candidate, names: Names): void => {
    if (this.count++ > 0) this.w.bytes(COMMA);
    this.writeOne(cand, names);
  };

  /** Resolves once the allocation requests written pass STREAM_FROM_BYTES: the body may start to leave. */
  whenLarge(): Promise<void> {
    return this.w.whenLarger(STREAM_FROM_BYTES);
  }

  /** Adds the summaries and closes the body: one buffer, or a stream of its chunks when large. */
  finish(query: CandidatesQuery, result: CandidatesResult): Buffer<ArrayBuffer> | ReadableStream<Uint8Array> {
    this.close(query, result);
    return this.w.size > STREAM_ABOVE_BYTES ? this.w.stream() : this.w.finish();
  }

  /**
   * The body as a stream that starts now, while the engine still writes
   * candidates; `result` brings the summaries and closes it, or fails it,
   * which aborts the response (`onError` hears why).
   */
  streamUntil(query: CandidatesQuery, result: Promise<CandidatesResult>, onError: (error: Error) => void): ReadableStream<Uint8Array> {
    const live = this.w.startStream();
    // Writing the summaries can fail too: that also aborts the stream rather than leaving it open.
    result
      .then((r) => this.close(query, r))
      .then(
        () => live.end(),
        (error: Error) => {
          onError(error);
          live.fail(error);
        },
      );
    return live.stream;
  }

  private close(query: CandidatesQuery, result: CandidatesResult): void {
    writeSummaries(this.w.bytes(SUMMARIES_OPEN), this.shape, query, result, this.quotedUuid);
    this.w.bytes(BODY_CLOSE);
  }

  private readonly quotedUuid = (names: Names, id: number): Buffer => {
    let q = this.quoted.get(id);
    if (q === undefined) this.quoted.set(id, (q = ascii(JSON.stringify(names.uuidOf(id)))));
    return q;
  };
}

type QuotedUuid = (names: Names, id: number) => Buffer;

const ALLOCATIONS_DICT = ascii('{"allocations":{');
const ALLOCATIONS_LIST = ascii('{"allocations":[');
const RESOURCES_OPEN = ascii(':{"resources":{');
const LIST_PROVIDER_OPEN = ascii('{"resource_provider":{"uuid":');
const LIST_RESOURCES_OPEN = ascii('},"resources":{');
const MAPPINGS_OPEN = ascii(',"mappings":{');
const CLOSE = ascii("}");
const CLOSE_TWO = ascii("}}");
const LIST_CLOSE = ascii("]}");
const ARRAY_CLOSE = ascii("]");

/**
 * Writes each allocation request straight into the body as bytes (see
 * BodyWriter), without intermediate strings or objects; each provider's
 * quoted uuid, each class's `"NAME":` and each suffix's `"SUFFIX":[` are
 * encoded once per request (8,000 nested candidates: about 21 -> 12 ms of
 * writing, CPU profile on this 2-core machine).
 */
function candidateWriter(w: BodyWriter, shape: ResponseShape, uuid: QuotedUuid): (cand: Candidate, names: Names) => void {
  const classKey = new Map<number, Buffer>();
  const suffixKey = new Map<string, Buffer>();
  // Reused with a count of its own: setting an array's length to 0 drops its storage, so every
  // candidate would allocate it again.
  const providers: number[] = [];
  return (cand, names) => {
    // Providers in order of first appearance (a candidate names a handful: a scan beats a Map).
    let count = 0;
    for (const rr of cand.resources) {
      let i = 0;
      while (i < count && providers[i] !== rr.providerId) i++;
      if (i === count) providers[count++] = rr.providerId;
    }
    w.bytes(shape.dictForm ? ALLOCATIONS_DICT : ALLOCATIONS_LIST);
    for (let i = 0; i < count; i++) {
      const p = providers[i];
      if (i > 0) w.bytes(COMMA);
      if (shape.dictForm) w.bytes(uuid(names, p)).bytes(RESOURCES_OPEN);
      else w.bytes(LIST_PROVIDER_OPEN).bytes(uuid(names, p)).bytes(LIST_RESOURCES_OPEN);
      let first = true;
      for (const rr of cand.resources) {
        if (rr.providerId !== p) continue;
        if (!first) w.bytes(COMMA);
        first = false;
        let key = classKey.get(rr.resourceClassId);
        if (key === undefined) classKey.set(rr.resourceClassId, (key = ascii(`${JSON.stringify(names.resourceClassName(rr.resourceClassId))}:`)));
        w.bytes(key).ascii(String(rr.amount));
      }
      w.bytes(CLOSE_TWO);
    }
    if (!shape.dictForm) {
      w.bytes(LIST_CLOSE);
      return;
    }
    w.bytes(CLOSE);
    if (shape.mappings) {
      w.bytes(MAPPINGS_OPEN);
      for (let g = 0; g < cand.groups.length; g++) {
        const { suffix, providers: mapped } = cand.groups[g];
        if (g > 0) w.bytes(COMMA);
        let key = suffixKey.get(suffix);
        if (key === undefined) suffixKey.set(suffix, (key = ascii(`${JSON.stringify(suffix)}:[`)));
        w.bytes(key);
        for (let i = 0; i < mapped.length; i++) {
          if (i > 0) w.bytes(COMMA);
          w.bytes(uuid(names, mapped[i]));
        }
        w.bytes(ARRAY_CLOSE);
      }
      w.bytes(CLOSE);
    }
    w.bytes(CLOSE);
  };
}

const SUMMARY_OPEN = ascii(':{"resources":{');
const CAPACITY_OPEN = ascii(':{"capacity":');
const USED = ascii(',"used":');
const TRAITS_OPEN = ascii(',"traits":[');
const PARENT = ascii(',"parent_provider_uuid":');
const ROOT = ascii(',"root_provider_uuid":');
const NULL = ascii("null");

/**
 * The provider summaries of every provider the candidates use, as bytes like
 * the requests: uuids, class keys and trait names are encoded once per
 * response (5,020 nested providers: about 33 -> 14 ms on this 2-core machine).
 */
function writeSummaries(w: BodyWriter, shape: ResponseShape, query: CandidatesQuery, r: CandidatesResult, uuid: QuotedUuid): void {
  const requested = new Set(query.groups.flatMap((g) => [...g.resources.keys()]));
  const quotedName = new Map<string, Buffer>();
  const name = (text: string) => {
    let q = quotedName.get(text);
    if (q === undefined) quotedName.set(text, (q = ascii(JSON.stringify(text))));
    return q;
  };
  for (let k = 0; k < r.summaries.length; k++) {
    const { provider, inventories, traits } = r.summaries[k];
    if (k > 0) w.bytes(COMMA);
    w.bytes(uuid(r, provider.id)).bytes(SUMMARY_OPEN);
    let first = true;
    for (const inv of inventories) {
      if (!shape.allClasses && !requested.has(inv.resourceClass)) continue;
      if (!first) w.bytes(COMMA);
      first = false;
      w.bytes(name(inv.resourceClass)).bytes(CAPACITY_OPEN).ascii(String(inv.capacity)).bytes(USED).ascii(String(inv.used)).bytes(CLOSE);
    }
    w.bytes(CLOSE);
    if (shape.traits) {
      w.bytes(TRAITS_OPEN);
      for (let i = 0; i < traits.length; i++) {
        if (i > 0) w.bytes(COMMA);
        w.bytes(name(traits[i]));
      }
      w.bytes(ARRAY_CLOSE);
    }
    if (shape.tree) {
      w.bytes(PARENT).bytes(provider.parentId === null ? NULL : uuid(r, provider.parentId));
      w.bytes(ROOT).bytes(uuid(r, provider.rootId));
    }
    w.bytes(CLOSE);
  }
}

/** Above this size a finished body is streamed chunk by chunk rather than copied into one buffer. */
const STREAM_ABOVE_BYTES = 4 * 1024 * 1024;
/**
 * Past this many bytes of allocation requests the body starts to leave while
 * the engine goes on: on a 2-core machine the client (or the kernel's copy)
 * reads the first megabytes on the other core instead of after the last
 * candidate, and the chunks leave instead of piling up (interleaved runs on
 * this 2-core VM: 8,000 nested candidates, 5.4 MB, p50 144 -> 132 ms; 80,000,
 * 54 MB, p50 1,593 -> 1,374 ms and peak RSS 240 -> 180 MB). Smaller answers
 * go whole, with a Content-Length.
 */
const STREAM_FROM_BYTES = 1024 * 1024;
