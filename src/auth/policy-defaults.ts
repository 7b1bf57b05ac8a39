/**
 * Placement's registered policy rules and their defaults, as upstream master
 * has them (after "Modify the placement API policies defaults and
 * scope_type"): every API is project scoped; the new defaults allow admin or
 * service, reshaping is service only, and GET /usages also lets a reader of
 * the project asked about see its usage. The deprecated default of each base
 * rule is plain `role:admin`; while new defaults are not enforced a caller
 * passes if either the new or the deprecated check passes, as oslo.policy
 * does for a rule with a deprecated_rule.
 *
 * Do not rename these rules: operators' policy files refer to them.
 */

export interface RuleDefault {
  name: string;
  check: string;
  /** The deprecated check this default replaced; OR-ed in unless new defaults are enforced. */
  deprecated?: string;
  description: string;
  /** API rules carry the operations they guard (documentation, and what gets scope checks). */
  operations?: string[];
}

const DEPRECATED_ADMIN = "role:admin";
export const ADMIN_OR_SERVICE = "rule:admin_or_service_api";
export const SERVICE = "rule:service_api";
export const PROJECT_READER_OR_ADMIN_OR_SERVICE = "rule:project_reader_or_admin_or_service_api";

export const BASE_RULES: RuleDefault[] = [
  { name: "admin_api", check: "role:admin", description: "Default rule for most placement APIs (deprecated)." },
  {
    name: "admin_or_service_api",
    check: "role:admin or role:service",
    deprecated: DEPRECATED_ADMIN,
    description: "Default rule for most placement APIs.",
  },
  {
    name: "service_api",
    check: "role:service",
    deprecated: DEPRECATED_ADMIN,
    description: "Default rule for service-to-service placement APIs.",
  },
  {
    name: "project_reader_or_admin_or_service_api",
    check: "(role:reader and project_id:%(project_id)s) or role:admin or role:service",
    deprecated: DEPRECATED_ADMIN,
    description: "Default rule for project level reader APIs: a reader of the target project, or admin or service.",
  },
];

/** An API rule; its name is a literal type, so the union of all names (ApiRuleName) is known to the compiler. */
interface ApiRule<Name extends string> extends RuleDefault {
  name: Name;
  /** "METHOD /path/{param}" as in Placement's policy documentation. */
  operations: string[];
}

const api = <const N extends string>(
  name: N,
  check: string,
  description: string,
  ...operations: string[]
): ApiRule<`placement:${N}`> => ({
  name: `placement:${name}`,
  check,
  description,
  operations,
});

export const API_RULES = [
  api("resource_providers:list", ADMIN_OR_SERVICE, "List resource providers.", "GET /resource_providers"),
  api("resource_providers:create", ADMIN_OR_SERVICE, "Create resource provider.", "POST /resource_providers"),
  api("resource_providers:show", ADMIN_OR_SERVICE, "Show resource provider.", "GET /resource_providers/{uuid}"),
  api("resource_providers:update", ADMIN_OR_SERVICE, "Update resource provider.", "PUT /resource_providers/{uuid}"),
  api("resource_providers:delete", ADMIN_OR_SERVICE, "Delete resource provider.", "DELETE /resource_providers/{uuid}"),
  api("resource_classes:list", ADMIN_OR_SERVICE, "List resource classes.", "GET /resource_classes"),
  api("resource_classes:create", ADMIN_OR_SERVICE, "Create resource class.", "POST /resource_classes"),
  api("resource_classes:show", ADMIN_OR_SERVICE, "Show resource class.", "GET /resource_classes/{name}"),
  api("resource_classes:update", ADMIN_OR_SERVICE, "Update resource class.", "PUT /resource_classes/{name}"),
  api("resource_classes:delete", ADMIN_OR_SERVICE, "Delete resource class.", "DELETE /resource_classes/{name}"),
  api("resource_providers:inventories:list", ADMIN_OR_SERVICE, "List resource provider inventories.", "GET /resource_providers/{uuid}/inventories"),
  api(
    "resource_providers:inventories:create",
    ADMIN_OR_SERVICE,
    "Create one resource provider inventory.",
    "POST /resource_providers/{uuid}/inventories",
  ),
  api(
    "resource_providers:inventories:show",
    ADMIN_OR_SERVICE,
    "Show resource provider inventory.",
    "GET /resource_providers/{uuid}/inventories/{resource_class}",
  ),
  api(
    "resource_providers:inventories:update",
    ADMIN_OR_SERVICE,
    "Update resource provider inventory.",
    "PUT /resource_providers/{uuid}/inventories",
    "PUT /resource_providers/{uuid}/inventories/{resource_class}",
  ),
  api(
    "resource_providers:inventories:delete",
    ADMIN_OR_SERVICE,
    "Delete resource provider inventory.",
    "DELETE /resource_providers/{uuid}/inventories",
    "DELETE /resource_providers/{uuid}/inventories/{resource_class}",
  ),
  api("resource_providers:aggregates:list", ADMIN_OR_SERVICE, "List resource provider aggregates.", "GET /resource_providers/{uuid}/aggregates"),
  api("resource_providers:aggregates:update", ADMIN_OR_SERVICE, "Update resource provider aggregates.", "PUT /resource_providers/{uuid}/aggregates"),
  api("resource_providers:usages", ADMIN_OR_SERVICE, "List resource provider usages.", "GET /resource_providers/{uuid}/usages"),
  api("usages", PROJECT_READER_OR_ADMIN_OR_SERVICE, "List total resource usages for a given project.", "GET /usages"),
  api("traits:list", ADMIN_OR_SERVICE, "List traits.", "GET /traits"),
  api("traits:show", ADMIN_OR_SERVICE, "Show trait.", "GET /traits/{name}"),
  api("traits:update", ADMIN_OR_SERVICE, "Update trait.", "PUT /traits/{name}"),
  api("traits:delete", ADMIN_OR_SERVICE, "Delete trait.", "DELETE /traits/{name}"),
  api("resource_providers:traits:list", ADMIN_OR_SERVICE, "List resource provider traits.", "GET /resource_providers/{uuid}/traits"),
  api("resource_providers:traits:update", ADMIN_OR_SERVICE, "Update resource provider traits.", "PUT /resource_providers/{uuid}/traits"),
  api("resource_providers:traits:delete", ADMIN_OR_SERVICE, "Delete resource provider traits.", "DELETE /resource_providers/{uuid}/traits"),
  api("allocations:manage", ADMIN_OR_SERVICE, "Manage allocations.", "POST /allocations"),
  api("allocations:list", ADMIN_OR_SERVICE, "List allocations.", "GET /allocations/{consumer_uuid}"),
  api("allocations:update", ADMIN_OR_SERVICE, "Update allocations.", "PUT /allocations/{consumer_uuid}"),
  api("allocations:delete", ADMIN_OR_SERVICE, "Delete allocations.", "DELETE /allocations/{consumer_uuid}"),
  api(
    "resource_providers:allocations:list",
    ADMIN_OR_SERVICE,
    "List resource provider allocations.",
    "GET /resource_providers/{uuid}/allocations",
  ),
  api("allocation_candidates:list", ADMIN_OR_SERVICE, "List allocation candidates.", "GET /allocation_candidates"),
  // An extension that reads what GET /allocation_candidates reads: the same default check.
  api("allocation_candidates:explain", ADMIN_OR_SERVICE, "Explain what an allocation candidates query finds, filter by filter (extension).", "GET /allocation_candidates/explain"),
  // An extension (select and claim in one step): it writes allocations, so it defaults as allocations:manage does.
  api("claims:create", ADMIN_OR_SERVICE, "Choose allocation candidates and claim them (extension).", "POST /claims"),
  api("changes:list", ADMIN_OR_SERVICE, "Follow the change feed of providers, inventories, usage, traits and aggregates (extension).", "GET /changes"),
  api("reshaper:reshape", SERVICE, "Reshape Inventory and Allocations.", "POST /reshaper"),
] as const;

/** The rule names handlers may ask for: authorize() takes only these, so a misspelt rule does not compile. */
export type ApiRuleName = (typeof API_RULES)[number]["name"];

/** Rules of this server's extensions beside the Placement API (docs/extensions.md), not Placement's own. */
export const EXTENSION_RULES = new Set(["placement:claims:create", "placement:changes:list", "placement:allocation_candidates:explain"]);

export const ALL_RULES: RuleDefault[] = [...BASE_RULES, ...API_RULES];
