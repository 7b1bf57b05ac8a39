/**
 * Builds provider data straight in the tables (the engine's tests should not
 * depend on the write routes), with fresh UUIDs and names per call so tests
 * isolate by data.
 */
import { randomUUID } from "node:crypto";
import { expect } from "vitest";
import { flatSourcePath } from "../../src/services/candidates/paths/flat-source.js";
import { flatViewPath } from "../../src/services/candidates/paths/flat-view.js";
import { generalPath } from "../../src/services/candidates/paths/general.js";
import type { AnswerPath } from "../../src/services/candidates/paths/path.js";
import { treeViewPath } from "../../src/services/candidates/paths/tree-view.js";
import { parseMicroversion } from "../../src/http/microversion.js";
import { parseCandidatesQuery } from "../../src/query/request-groups.js";
import { answerLengths } from "../../src/render/candidates/lengths.js";
import { bodyText, BoundRecorder, boundedParts, referenceBody } from "../support/bodies.js";
import { answerShape } from "../../src/services/candidates/answer-shape.js";
import { CandidatesService, type CandidatesPath, type CandidatesServiceOptions } from "../../src/services/candidates/service.js";
import { startHarness, type Harness, type TestResponse } from "../support/harness.js";

export interface Inv {
  total: number;
  reserved?: number;
  minUnit?: number;
  maxUnit?: number;
  stepSize?: number;
  ratio?: number;
}

export interface ProviderSpec {
  parent?: Provider;
  inventory?: Record<string, Inv | number>;
  traits?: string[];
  aggregates?: string[];
}

export interface Provider {
  id: number;
  uuid: string;
  name: string;
  rootId: number;
}

export class Data {
  constructor(private readonly t: Harness) {}

  async provider(spec: ProviderSpec = {}): Promise<Provider> {
    const uuid = randomUUID();
    const name = `rp-${uuid}`;
    const [row] = await this.t.sql<{ id: number }>(
      `INSERT INTO resource_providers (uuid, name, parent_provider_id, root_provider_id) VALUES ($1, $2, $3, $4) RETURNING id`,
      [uuid, name, spec.parent?.id ?? null, spec.parent?.rootId ?? null],
    );
    if (!spec.parent) await this.t.sql(`UPDATE resource_providers SET root_provider_id = id WHERE id = $1`, [row.id]);
    const p: Provider = { id: row.id, uuid, name, rootId: spec.parent?.rootId ?? row.id };
    for (const [rc, inv] of Object.entries(spec.inventory ?? {})) await this.inventory(p, rc, typeof inv === "number" ? { total: inv } : inv);
    for (const trait of spec.traits ?? []) await this.trait(p, trait);
    for (const agg of spec.aggregates ?? []) await this.aggregate(p, agg);
    return p;
  }

  async inventory(p: Provider, rc: string, inv: Inv): Promise<void> {
    await this.t.sql(`INSERT INTO resource_classes (name) VALUES ($1) ON CONFLICT (name) DO NOTHING`, [rc]);
    await this.t.sql(
      `INSERT INTO inventories (resource_provider_id, resource_class_id, total, reserved, min_unit, max_unit, step_size, allocation_ratio)
       SELECT $1, id, $3, $4, $5, $6, $7, $8 FROM resource_classes WHERE name = $2`,
      [p.id, rc, inv.total, inv.reserved ?? 0, inv.minUnit ?? 1, inv.maxUnit ?? inv.total, inv.stepSize ?? 1, inv.ratio ?? 1],
    );
  }

  async defineTrait(name: string): Promise<void> {
    await this.t.sql(`INSERT INTO traits (name) VALUES ($1) ON CONFLICT (name) DO NOTHING`, [name]);
  }

  async trait(p: Provider, name: string): Promise<void> {
    await this.defineTrait(name);
    await this.t.sql(
      `INSERT INTO resource_provider_traits (resource_provider_id, trait_id) SELECT $1, id FROM traits WHERE name = $2`,
      [p.id, name],
    );
  }

  async aggregate(p: Provider, uuid: string): Promise<void> {
    await this.t.sql(`INSERT INTO aggregates (uuid) VALUES ($1) ON CONFLICT (uuid) DO NOTHING`, [uuid]);
    await this.t.sql(
      `INSERT INTO resource_provider_aggregates (resource_provider_id, aggregate_id) SELECT $1, id FROM aggregates WHERE uuid = $2`,
      [p.id, uuid],
    );
  }

  /** Deletes `p` and everything that names it (its allocations, inventories, traits, aggregates). */
  async remove(p: Pick<Provider, "id">): Promise<void> {
    for (const table of ["allocations", "inventories", "resource_provider_traits", "resource_provider_aggregates"]) {
      await this.t.sql(`DELETE FROM ${table} WHERE resource_provider_id = $1`, [p.id]);
    }
    await this.t.sql(`DELETE FROM resource_providers WHERE id = $1`, [p.id]);
  }

  /** Allocates `used` of `rc` from `p` to a new consumer. */
  async allocate(p: Provider, rc: string, used: number): Promise<void> {
    const ext = randomUUID();
    await this.t.sql(`INSERT INTO projects (external_id) VALUES ($1) ON CONFLICT DO NOTHING`, [ext]);
    await this.t.sql(`INSERT INTO users (external_id) VALUES ($1) ON CONFLICT DO NOTHING`, [ext]);
    const [consumer] = await this.t.sql<{ id: number }>(
      `INSERT INTO consumers (uuid, project_id, user_id)
       SELECT $1, p.id, u.id FROM projects p, users u WHERE p.external_id = $2 AND u.external_id = $2 RETURNING id`,
      [randomUUID(), ext],
    );
    await this.t.sql(
      `INSERT INTO allocations (resource_provider_id, consumer_id, resource_class_id, used) SELECT $1, $2, id, $4 FROM resource_classes WHERE name = $3`,
      [p.id, consumer.id, rc, used],
    );
  }
}

/** A fresh custom name so tests sharing a database do not see each other's traits or classes. */
export const custom = (prefix: string): string => `CUSTOM_${prefix}_${randomUUID().slice(0, 8).toUpperCase()}`;

/** A harness of its own (fresh database) and a data builder on it, for a test file's beforeAll. */
export async function startData(): Promise<{ t: Harness; d: Data }> {
  const t = await startHarness();
  return { t, d: new Data(t) };
}

/**
 * Each answer path built to run alone, every request to it (the tree view
 * over flat clouds too, which the service's own list leaves to the flat
 * paths).
 */
const ALONE: Record<CandidatesPath, AnswerPath> = {
  "flat-view": flatViewPath,
  "tree-view": treeViewPath({ overFlatClouds: true }),
  "flat-source": flatSourcePath,
  general: generalPath,
};

/** Candidates options for a service answering by `path` alone (a request it declines fails). */
export const alone = (path: CandidatesPath): Pick<CandidatesServiceOptions, "paths"> => ({ paths: [ALONE[path]] });

/** The paths that can answer on a flat cloud: every path (the general plan, over the database or the view's trees, answers any cloud). */
export const FLAT_CLOUD_PATHS = ["flat-view", "flat-source", "general", "tree-view"] as const satisfies readonly CandidatesPath[];

/** The paths that can answer any cloud: the general plan over the database's reads and over the view's trees. */
export const TREE_CLOUD_PATHS = ["general", "tree-view"] as const satisfies readonly CandidatesPath[];

/**
 * GET /allocation_candidates?query through the service's own choice of path
 * (the default app) and through each of `paths` alone (an app each),
 * asserting they answer alike: the same bytes, or the same error status and
 * detail. A path in `mayDecline` may instead decline the request (no path
 * of its app takes it: a 500), counted in `declined`; any other must
 * answer. Each answer of 200 is also rendered by the plain reference
 * renderer (src/render/candidates/reference.ts) from the same path, and its
 * bytes must be the served ones. Returns the service's own answer.
 */
export function everyPath(
  t: Harness,
  paths: readonly CandidatesPath[] = FLAT_CLOUD_PATHS,
  options: { mayDecline?: readonly CandidatesPath[]; declined?: Map<CandidatesPath, number> } = {},
) {
  const via = [
    { path: "the service's choice", request: t.request, service: new CandidatesService(t.database.db, t.config) },
    ...paths.map((path) => ({ path, request: t.requestVia(alone(path)), service: new CandidatesService(t.database.db, t.config, alone(path)) })),
  ];
  return async (query: string, version = "latest"): Promise<TestResponse> => {
    const answers = [];
    for (const { request } of via) answers.push(await request("GET", `/allocation_candidates?${query}`, { version }));
    const [first, ...rest] = answers;
    for (let i = 0; i < answers.length; i++) {
      if (answers[i].status !== 200) continue;
      const reference = await referenceAnswer(via[i].service, query, version);
      expect(answers[i].text, `${via[i].path} against the reference renderer for ${query} at ${version}`).toBe(reference);
    }
    for (let i = 0; i < rest.length; i++) {
      const path = via[i + 1].path;
      if (rest[i].status === 500 && options.mayDecline?.includes(path as CandidatesPath)) {
        options.declined?.set(path as CandidatesPath, (options.declined.get(path as CandidatesPath) ?? 0) + 1);
        continue;
      }
      const what = `${path} against ${via[0].path} for ${query} at ${version}`;
      expect(rest[i].status, what).toBe(first.status);
      if (first.status === 200) expect(rest[i].text, what).toBe(first.text);
      else expect(rest[i].body?.errors?.[0]?.detail, what).toBe(first.body?.errors?.[0]?.detail);
    }
    return first;
  };
}

/**
 * The answer to `query` at `version` from `service`, rendered by the plain
 * reference renderer, with the upper bound on its bytes that the answering
 * path gave (the tree view: services/candidates/answer-bound.ts) as
 * `bounded` (its parts and the answer's), if any.
 */
export async function boundedAnswer(
  service: CandidatesService,
  query: string,
  version: string,
): Promise<{ text: string; bounded?: ReturnType<typeof boundedParts>; atMost?: (over: number) => number }> {
  const mv = parseMicroversion(`placement ${version}`);
  const parsed = parseCandidatesQuery([...new URLSearchParams(query).entries()], mv);
  const shape = answerShape(mv);
  const body = referenceBody(shape, parsed);
  const sink = new BoundRecorder(body);
  const text = await bodyText(await body.respond(service.answer(parsed, shape, sink), () => {}));
  const atMost = sink.atMost;
  if (atMost === undefined) return { text };
  const lengths = answerLengths(shape, parsed);
  return { text, bounded: boundedParts(text, atMost, lengths), atMost: (over) => atMost(lengths, over) };
}

/**
 * The answer to `query` at `version` from `service`, rendered by the plain
 * reference renderer. When the path that answered gave an upper bound on
 * the answer's bytes, the answer must be within it (a bounded answer leaves
 * early on its word): the requests and the summaries each within their own
 * part, since the summaries of every provider outweigh a small answer's
 * requests.
 */
async function referenceAnswer(service: CandidatesService, query: string, version: string): Promise<string> {
  const { text, bounded } = await boundedAnswer(service, query, version);
  if (bounded) {
    for (const part of ["all", "requests", "summaries"] as const) {
      expect(bounded.bound[part], `the upper bound on the bytes (${part}) of ${query} at ${version}`).toBeGreaterThanOrEqual(bounded.answer[part]);
    }
  }
  return text;
}
