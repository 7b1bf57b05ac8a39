/**
 * Every operation the server serves: its first microversion, its answers
 * (the response schemas of src/openapi/responses.ts) and its error statuses.
 * What a request carries (body, query, path parameters) is not repeated here:
 * the document takes it from src/schemas' registry, the tables the routes
 * validate with. test/openapi/document.test.ts checks this list against the
 * routes the app registers and the registry, and each `since` against the
 * server's answer one version below it.
 */
import type { z } from "zod";
import type { VersionString } from "../http/microversion.js";
import * as R from "./responses.js";

/** Schemas by the microversion each applies from (until the next one's; null: none from that version). */
export type VersionTable = ReadonlyArray<readonly [VersionString, z.ZodType | null]>;

export interface ResponseSpec {
  description: string;
  /** JSON bodies by microversion; none for an empty answer. */
  json?: VersionTable;
  /** A body that is not JSON (its media type). */
  text?: string;
}

export interface Operation {
  method: "get" | "put" | "post" | "delete";
  /** OpenAPI path template. */
  path: string;
  summary: string;
  /** The first microversion that serves it (1.0 when absent). */
  since?: VersionString;
  /** Answered without a token. */
  public?: boolean;
  /** Outside the microversioned Placement API: the version header is not read. */
  unversioned?: boolean;
  /** Not in upstream Placement (an extension of this server). */
  extension?: boolean;
  responses: Record<number, ResponseSpec>;
  /** Error statuses it may answer with (Placement's error document). */
  errors: number[];
}

/** Every authenticated call may be refused (401, 403), time out in the database (503) or fail (500). */
const COMMON = [401, 403, 500, 503];
const read = (...more: number[]) => [...COMMON, 406, ...more].sort();
const write = (...more: number[]) => [...COMMON, 400, 415, ...more].sort();

const since = (v: VersionString, schema: z.ZodType) => [[v, schema]] as const;
const noContent: ResponseSpec = { description: "Done; no body." };

export const OPERATIONS: Operation[] = [
  {
    method: "get",
    path: "/",
    summary: "The version document: the microversions this server speaks.",
    public: true,
    responses: { 200: { description: "The versions.", json: since("1.0", R.VERSIONS_DOCUMENT) } },
    errors: [406, 500],
  },
  {
    method: "get",
    path: "/openapi.json",
    summary: "This document.",
    public: true,
    unversioned: true,
    extension: true,
    responses: { 200: { description: "The OpenAPI 3.1 document.", text: "application/json" } },
    errors: [500],
  },
  {
    method: "get",
    path: "/healthcheck",
    summary: "oslo.middleware's healthcheck: OK, or 503 with the reason (the database check is cached for a moment).",
    public: true,
    unversioned: true,
    responses: {
      200: { description: "Healthy (text, or JSON when asked).", text: "text/plain", json: since("1.0", R.HEALTH) },
      503: { description: "Unhealthy, with the reason (text, or JSON when asked).", text: "text/plain", json: since("1.0", R.HEALTH) },
    },
    errors: [],
  },
  {
    method: "get",
    path: "/metrics",
    summary: "Prometheus metrics (only when PLACEMENT_METRICS_ON_API_PORT is set; admin or service role).",
    unversioned: true,
    extension: true,
    responses: { 200: { description: "Prometheus text format.", text: "text/plain" } },
    errors: [401, 403, 500],
  },
  {
    method: "get",
    path: "/resource_providers",
    summary: "List resource providers, filtered.",
    responses: { 200: { description: "The providers.", json: [["1.0", R.PROVIDERS_V1_0], ["1.14", R.PROVIDERS_V1_14]] } },
    errors: read(400),
  },
  {
    method: "post",
    path: "/resource_providers",
    summary: "Create a resource provider.",
    responses: {
      200: { description: "Created (from 1.20): the provider.", json: since("1.20", R.PROVIDER_V1_14) },
      201: { description: "Created (up to 1.19); Location names it, no body." },
    },
    errors: write(409),
  },
  {
    method: "get",
    path: "/resource_providers/{uuid}",
    summary: "Show a resource provider.",
    responses: { 200: { description: "The provider.", json: [["1.0", R.PROVIDER_V1_0], ["1.14", R.PROVIDER_V1_14]] } },
    errors: read(404),
  },
  {
    method: "put",
    path: "/resource_providers/{uuid}",
    summary: "Rename or re-parent a resource provider.",
    responses: { 200: { description: "The updated provider.", json: [["1.0", R.PROVIDER_V1_0], ["1.14", R.PROVIDER_V1_14]] } },
    errors: write(404, 409),
  },
  {
    method: "delete",
    path: "/resource_providers/{uuid}",
    summary: "Delete a resource provider without allocations or children.",
    responses: { 204: noContent },
    errors: [...COMMON, 404, 409].sort(),
  },
  {
    method: "get",
    path: "/resource_providers/{uuid}/inventories",
    summary: "A provider's inventories.",
    responses: { 200: { description: "The inventories.", json: since("1.0", R.INVENTORIES) } },
    errors: read(404),
  },
  {
    method: "put",
    path: "/resource_providers/{uuid}/inventories",
    summary: "Replace all of a provider's inventories.",
    responses: { 200: { description: "The inventories.", json: since("1.0", R.INVENTORIES) } },
    errors: write(404, 409),
  },
  {
    method: "post",
    path: "/resource_providers/{uuid}/inventories",
    summary: "Add one inventory.",
    responses: { 201: { description: "The inventory.", json: since("1.0", R.ONE_INVENTORY) } },
    errors: write(404, 409),
  },
  {
    method: "delete",
    path: "/resource_providers/{uuid}/inventories",
    summary: "Remove all of a provider's inventories.",
    since: "1.5",
    responses: { 204: noContent },
    errors: [...COMMON, 404, 405, 409].sort(),
  },
  {
    method: "get",
    path: "/resource_providers/{uuid}/inventories/{resource_class}",
    summary: "One inventory.",
    responses: { 200: { description: "The inventory.", json: since("1.0", R.ONE_INVENTORY) } },
    errors: read(404),
  },
  {
    method: "put",
    path: "/resource_providers/{uuid}/inventories/{resource_class}",
    summary: "Change one inventory.",
    responses: { 200: { description: "The inventory.", json: since("1.0", R.ONE_INVENTORY) } },
    errors: write(404, 409),
  },
  {
    method: "delete",
    path: "/resource_providers/{uuid}/inventories/{resource_class}",
    summary: "Remove one inventory.",
    responses: { 204: noContent },
    errors: [...COMMON, 404, 409].sort(),
  },
  {
    method: "get",
    path: "/resource_providers/{uuid}/aggregates",
    summary: "A provider's aggregates.",
    since: "1.1",
    responses: { 200: { description: "The aggregates.", json: [["1.1", R.AGGREGATES_V1_1], ["1.19", R.AGGREGATES_V1_19]] } },
    errors: read(404),
  },
  {
    method: "put",
    path: "/resource_providers/{uuid}/aggregates",
    summary: "Replace a provider's aggregates.",
    since: "1.1",
    responses: { 200: { description: "The aggregates.", json: [["1.1", R.AGGREGATES_V1_1], ["1.19", R.AGGREGATES_V1_19]] } },
    errors: write(404, 409),
  },
  {
    method: "get",
    path: "/resource_providers/{uuid}/traits",
    summary: "A provider's traits.",
    since: "1.6",
    responses: { 200: { description: "The traits.", json: since("1.6", R.PROVIDER_TRAITS) } },
    errors: read(404),
  },
  {
    method: "put",
    path: "/resource_providers/{uuid}/traits",
    summary: "Replace a provider's traits.",
    since: "1.6",
    responses: { 200: { description: "The traits.", json: since("1.6", R.PROVIDER_TRAITS) } },
    errors: write(404, 409),
  },
  {
    method: "delete",
    path: "/resource_providers/{uuid}/traits",
    summary: "Remove all of a provider's traits.",
    since: "1.6",
    responses: { 204: noContent },
    errors: [...COMMON, 404, 409].sort(),
  },
  {
    method: "get",
    path: "/resource_providers/{uuid}/allocations",
    summary: "The allocations against a provider, by consumer.",
    responses: {
      200: { description: "The allocations.", json: [["1.0", R.PROVIDER_ALLOCATIONS_V1_0], ["1.28", R.PROVIDER_ALLOCATIONS_V1_28]] },
    },
    errors: read(404),
  },
  {
    method: "get",
    path: "/resource_providers/{uuid}/usages",
    summary: "A provider's usages by resource class.",
    responses: { 200: { description: "The usages.", json: since("1.0", R.PROVIDER_USAGES) } },
    errors: read(404),
  },
  {
    method: "get",
    path: "/usages",
    summary: "A project's (or user's) usages.",
    since: "1.9",
    responses: { 200: { description: "The usages.", json: [["1.9", R.USAGES_V1_9], ["1.38", R.USAGES_V1_38]] } },
    errors: read(400),
  },
  {
    method: "get",
    path: "/resource_classes",
    summary: "List resource classes.",
    since: "1.2",
    responses: { 200: { description: "The classes.", json: since("1.2", R.RESOURCE_CLASSES) } },
    errors: read(),
  },
  {
    method: "post",
    path: "/resource_classes",
    summary: "Create a custom resource class.",
    since: "1.2",
    responses: { 201: { description: "Created; Location names it." } },
    errors: write(409),
  },
  {
    method: "get",
    path: "/resource_classes/{name}",
    summary: "Show a resource class.",
    since: "1.2",
    responses: { 200: { description: "The class.", json: since("1.2", R.ONE_RESOURCE_CLASS) } },
    errors: read(404),
  },
  {
    method: "put",
    path: "/resource_classes/{name}",
    summary: "Rename a custom class (up to 1.6); from 1.7 create it if missing, without a body.",
    since: "1.2",
    responses: {
      200: { description: "Renamed (up to 1.6).", json: [["1.2", R.ONE_RESOURCE_CLASS], ["1.7", null]] },
      201: { description: "Created (from 1.7)." },
      204: { description: "Already there (from 1.7)." },
    },
    errors: write(404, 409),
  },
  {
    method: "delete",
    path: "/resource_classes/{name}",
    summary: "Delete a custom resource class not in use.",
    since: "1.2",
    responses: { 204: noContent },
    errors: [...COMMON, 400, 404, 409].sort(),
  },
  {
    method: "get",
    path: "/traits",
    summary: "List traits.",
    since: "1.6",
    responses: { 200: { description: "The traits.", json: since("1.6", R.TRAITS) } },
    errors: read(400),
  },
  {
    method: "get",
    path: "/traits/{name}",
    summary: "Whether a trait exists (204) or not (404).",
    since: "1.6",
    responses: { 204: { description: "It exists." } },
    errors: [...COMMON, 404].sort(),
  },
  {
    method: "put",
    path: "/traits/{name}",
    summary: "Create a custom trait if missing.",
    since: "1.6",
    responses: { 201: { description: "Created." }, 204: { description: "Already there." } },
    errors: [...COMMON, 400].sort(),
  },
  {
    method: "delete",
    path: "/traits/{name}",
    summary: "Delete a custom trait no provider has.",
    since: "1.6",
    responses: { 204: noContent },
    errors: [...COMMON, 400, 404, 409].sort(),
  },
  {
    method: "get",
    path: "/allocations/{consumer_uuid}",
    summary: "A consumer's allocations.",
    responses: {
      200: {
        description: "The allocations.",
        json: [
          ["1.0", R.CONSUMER_ALLOCATIONS_V1_0],
          ["1.12", R.CONSUMER_ALLOCATIONS_V1_12],
          ["1.28", R.CONSUMER_ALLOCATIONS_V1_28],
          ["1.38", R.CONSUMER_ALLOCATIONS_V1_38],
        ],
      },
    },
    errors: read(),
  },
  {
    method: "put",
    path: "/allocations/{consumer_uuid}",
    summary: "Replace a consumer's allocations.",
    responses: { 204: noContent },
    errors: write(409),
  },
  {
    method: "delete",
    path: "/allocations/{consumer_uuid}",
    summary: "Remove a consumer's allocations.",
    responses: { 204: noContent },
    errors: [...COMMON, 404, 409].sort(),
  },
  {
    method: "post",
    path: "/allocations",
    summary: "Replace the allocations of several consumers in one transaction.",
    since: "1.13",
    responses: { 204: noContent },
    errors: write(409),
  },
  {
    method: "get",
    path: "/allocation_candidates",
    summary: "Where a request fits: allocation requests and provider summaries.",
    since: "1.10",
    responses: {
      200: {
        description: "The candidates.",
        json: [
          ["1.10", R.CANDIDATES_V1_10],
          ["1.12", R.CANDIDATES_V1_12],
          ["1.17", R.CANDIDATES_V1_17],
          ["1.29", R.CANDIDATES_V1_29],
          ["1.34", R.CANDIDATES_V1_34],
        ],
      },
    },
    errors: read(400),
  },
  {
    method: "post",
    path: "/reshaper",
    summary: "Move inventories and allocations between providers atomically.",
    since: "1.30",
    responses: { 204: noContent },
    errors: write(409),
  },
  {
    method: "post",
    path: "/claims",
    summary: "Select and claim in one transaction; the query string is GET /allocation_candidates'.",
    since: "1.10",
    extension: true,
    responses: { 200: { description: "What was claimed.", json: [["1.10", R.CLAIMS_V1_10], ["1.34", R.CLAIMS_V1_34]] } },
    errors: write(409),
  },
  {
    method: "get",
    path: "/allocation_candidates/explain",
    summary: "Why a candidates query finds what it finds: providers left per filter, trees left per combining constraint, the nearest misses; the query string is GET /allocation_candidates'.",
    since: "1.10",
    extension: true,
    responses: { 200: { description: "The funnel.", json: since("1.10", R.EXPLAIN) } },
    errors: read(400),
  },
  {
    method: "get",
    path: "/changes",
    summary: "The change feed: provider states committed after a cursor (a long poll).",
    extension: true,
    responses: { 200: { description: "The changes and the next cursor.", json: since("1.0", R.CHANGES) } },
    errors: read(400, 410),
  },
];
