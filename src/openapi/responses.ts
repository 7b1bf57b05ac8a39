/**
 * Response bodies as zod schemas, for the OpenAPI document only (the routes
 * shape their answers by hand). Strict objects, one per microversion where a
 * field appears, so test/openapi/document.test.ts can prove that real answers
 * have exactly these fields at the version asked for.
 */
import { z } from "zod";

const uuid = z.string();
const int = z.int();
const link = z.strictObject({ rel: z.string(), href: z.string() });
const links = z.array(link);
const amounts = z.record(z.string(), int);

export const VERSIONS_DOCUMENT = z.strictObject({
  versions: z.array(
    z.strictObject({ id: z.string(), max_version: z.string(), min_version: z.string(), status: z.string(), links }),
  ),
});

/** oslo.middleware's healthcheck answer as JSON. */
export const HEALTH = z.strictObject({ detailed: z.boolean(), reasons: z.array(z.string()) });

export const PROVIDER_V1_0 = z.strictObject({ uuid, name: z.string(), generation: int, links });
export const PROVIDER_V1_14 = PROVIDER_V1_0.extend({ parent_provider_uuid: uuid.nullable(), root_provider_uuid: uuid });
export const PROVIDERS_V1_0 = z.strictObject({ resource_providers: z.array(PROVIDER_V1_0) });
export const PROVIDERS_V1_14 = z.strictObject({ resource_providers: z.array(PROVIDER_V1_14) });

const INVENTORY = z.strictObject({
  total: int,
  reserved: int,
  min_unit: int,
  max_unit: int,
  step_size: int,
  allocation_ratio: z.number(),
});
export const INVENTORIES = z.strictObject({ resource_provider_generation: int, inventories: z.record(z.string(), INVENTORY) });
export const ONE_INVENTORY = INVENTORY.extend({ resource_provider_generation: int });

export const AGGREGATES_V1_1 = z.strictObject({ aggregates: z.array(uuid) });
export const AGGREGATES_V1_19 = AGGREGATES_V1_1.extend({ resource_provider_generation: int });

const RESOURCE_CLASS = z.strictObject({ name: z.string(), links });
export const ONE_RESOURCE_CLASS = RESOURCE_CLASS;
export const RESOURCE_CLASSES = z.strictObject({ resource_classes: z.array(RESOURCE_CLASS) });

export const TRAITS = z.strictObject({ traits: z.array(z.string()) });
export const PROVIDER_TRAITS = TRAITS.extend({ resource_provider_generation: int });

export const PROVIDER_USAGES = z.strictObject({ resource_provider_generation: int, usages: amounts });
export const USAGES_V1_9 = z.strictObject({ usages: amounts });
/** 1.38: by consumer type, each with its consumer_count beside the amounts. */
export const USAGES_V1_38 = z.strictObject({ usages: z.record(z.string(), amounts) });

/** Who the consumer belongs to is shown only when it holds something: those fields are optional. */
const consumerAllocations = z.record(uuid, z.strictObject({ generation: int, resources: amounts }));
export const CONSUMER_ALLOCATIONS_V1_0 = z.strictObject({ allocations: consumerAllocations });
export const CONSUMER_ALLOCATIONS_V1_12 = CONSUMER_ALLOCATIONS_V1_0.extend({ project_id: z.string().optional(), user_id: z.string().optional() });
export const CONSUMER_ALLOCATIONS_V1_28 = CONSUMER_ALLOCATIONS_V1_12.extend({ consumer_generation: int.nullable().optional() });
export const CONSUMER_ALLOCATIONS_V1_38 = CONSUMER_ALLOCATIONS_V1_28.extend({ consumer_type: z.string().optional() });

export const PROVIDER_ALLOCATIONS_V1_0 = z.strictObject({
  allocations: z.record(uuid, z.strictObject({ resources: amounts })),
  resource_provider_generation: int,
});
export const PROVIDER_ALLOCATIONS_V1_28 = z.strictObject({
  allocations: z.record(uuid, z.strictObject({ resources: amounts, consumer_generation: int })),
  resource_provider_generation: int,
});

// Allocation candidates: the request form changes at 1.12 and 1.34, the summaries at 1.17 and 1.29.
const listRequest = z.strictObject({
  allocations: z.array(z.strictObject({ resource_provider: z.strictObject({ uuid }), resources: amounts })),
});
const dictRequest = z.strictObject({ allocations: z.record(uuid, z.strictObject({ resources: amounts })) });
const mappedRequest = dictRequest.extend({ mappings: z.record(z.string(), z.array(uuid)) });
const capacities = z.record(z.string(), z.strictObject({ capacity: int, used: int }));
const summary = z.strictObject({ resources: capacities });
const summaryWithTraits = summary.extend({ traits: z.array(z.string()) });
const summaryInTree = summaryWithTraits.extend({ parent_provider_uuid: uuid.nullable(), root_provider_uuid: uuid });
const candidates = (request: z.ZodType, providerSummary: z.ZodType) =>
  z.strictObject({ allocation_requests: z.array(request), provider_summaries: z.record(uuid, providerSummary) });
export const CANDIDATES_V1_10 = candidates(listRequest, summary);
export const CANDIDATES_V1_12 = candidates(dictRequest, summary);
export const CANDIDATES_V1_17 = candidates(dictRequest, summaryWithTraits);
export const CANDIDATES_V1_29 = candidates(dictRequest, summaryInTree);
export const CANDIDATES_V1_34 = candidates(mappedRequest, summaryInTree);

const claimed = z.strictObject({ consumer_uuid: uuid, allocations: consumerAllocations, consumer_generation: int });
const claims = (alternate: z.ZodType) => z.strictObject({ claims: z.array(claimed), unplaced: z.array(uuid), alternates: z.array(alternate) });
export const CLAIMS_V1_10 = claims(dictRequest);
export const CLAIMS_V1_34 = claims(mappedRequest);

export const EXPLAIN = z.strictObject({
  allocation_requests: int,
  groups: z.array(z.strictObject({ suffix: z.string(), filters: z.array(z.strictObject({ filter: z.string(), remaining: int })), providers: int })),
  trees: z.array(z.strictObject({ constraint: z.string(), remaining: int })),
  nearest: z.array(z.strictObject({ uuid, name: z.string().nullable(), short: z.array(z.string()) })),
});

const providerState = z.strictObject({
  generation: int,
  name: z.string(),
  parent_provider_uuid: uuid.nullable(),
  root_provider_uuid: uuid,
  inventories: z.record(z.string(), INVENTORY),
  usages: amounts,
  traits: z.array(z.string()),
  aggregates: z.array(uuid),
});
const change = z.union([
  providerState.extend({ cursor: int, resource_provider_uuid: uuid, deleted: z.literal(false) }),
  z.strictObject({ cursor: int, resource_provider_uuid: uuid, deleted: z.literal(true) }),
]);
export const CHANGES = z.strictObject({ changes: z.array(change), next: int });

/**
 * Placement's error document: one error with its status, title, detail, the
 * request id and (from 1.23) a code. The allow-list of a 405 and similar
 * extras may follow, so further members are allowed.
 */
export const PLACEMENT_ERROR = z.strictObject({
  errors: z
    .array(
      z.looseObject({
        status: int,
        title: z.string(),
        detail: z.string(),
        code: z.string().optional(),
        request_id: z.string().optional(),
      }),
    )
    .length(1),
});
/** webob's own rendering of an error without a detail (a bare 404 of an unknown route, for instance). */
export const WEBOB_ERROR = z.strictObject({ message: z.string(), code: z.string(), title: z.string() });
