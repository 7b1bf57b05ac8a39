/**
 * The one table from what went wrong to what the client sees: each domain
 * error (services/errors.ts) and each database failure that means something
 * (db/sql-state.ts) gets Placement's status, error code and wording here,
 * byte for byte (clients and the conformance tests match on them). A new
 * domain error without a row does not compile.
 */
import { databaseFault, DomainError, type AnyDomainError, type ClassLookup, type ProviderTreeProblem } from "../services/errors.js";
import { ErrorCode, PlacementError, RETRY_AFTER_SECONDS } from "./errors.js";
import { pastHandler } from "./vary.js";
import { sqlState } from "../db/sql-state.js";

interface Answer {
  status: 400 | 404 | 409 | 410 | 503;
  detail: string;
  code?: ErrorCode;
  headers?: Record<string, string>;
  /** Placement lets this one rise past its handler (an uncaught NotFound): no Vary (http/vary.ts). */
  pastHandler?: true;
}

type Rows = { [K in AnyDomainError["kind"]]: (err: Extract<AnyDomainError, { kind: K }>) => Answer };

const noProvider = (uuid: string) => `No resource provider with uuid ${uuid} found`;
const noClass = (name: string) => `No such resource class ${name}.`;
const concurrently = (what: string) => `Another thread concurrently updated the ${what}. Please retry your update`;
const unableToAllocate = (reason: string) => `Unable to allocate inventory: ${reason}`;
/** Placement's wording for a stale generation on traits and aggregates. */
const GENERATION_ALREADY_CHANGED = "Resource provider's generation already changed. Please update the generation and try again.";

const TREE_PROBLEMS: Record<ProviderTreeProblem, string> = {
  "name required": "name is required",
  "own parent": "parent provider UUID cannot be same as UUID. Please set parent provider UUID to None if there is no parent.",
  "parent missing": "parent provider UUID does not exist.",
  "re-parenting not allowed": "re-parenting a provider is not currently allowed.",
  "un-parenting not allowed": "un-parenting a provider is not currently allowed.",
  loop: "creating loop in the provider tree is not allowed.",
};

function classNotFound(name: string, lookup: ClassLookup): Answer {
  switch (lookup.in) {
    case "lookup":
    case "inventory update": // Placement lets the class lookup's NotFound through: a 404, not a 400.
      return { status: 404, detail: noClass(name), pastHandler: true };
    case "query":
      return { status: 400, detail: `Invalid resource class in resources parameter: ${noClass(name)}` };
    case "inventories":
      return { status: 400, detail: `Unknown resource class in inventory for resource provider ${lookup.provider}: ${noClass(name)}` };
    case "new inventory":
      return { status: 400, detail: `Unable to create inventory for resource provider ${lookup.provider}: ${noClass(name)}` };
    case "inventory delete":
      return { status: 404, detail: `No inventory of class ${name} found for delete: ${noClass(name)}` };
    case "allocations": {
      const consumer = lookup.consumer === undefined ? "" : ` for consumer ${lookup.consumer}:`;
      return { status: 400, detail: `Unable to allocate inventory${consumer} ${noClass(name)}` };
    }
    case "reshape":
      return { status: 400, detail: `malformed reshaper data: ${noClass(name)}` };
  }
}

const ROWS: Rows = {
  ProviderNotFound: ({ uuid, during }) => {
    switch (during) {
      case "lookup":
        return { status: 404, detail: noProvider(uuid), pastHandler: true };
      case "delete":
        return { status: 404, detail: `${noProvider(uuid)} for delete` };
      case "list inventories":
        return { status: 404, detail: `${noProvider(uuid)} : ${noProvider(uuid)}` };
      case "list allocations":
        return { status: 404, detail: `Resource provider '${uuid}' not found: ${noProvider(uuid)}` };
      case "list usages":
      case "list traits":
        return { status: 404, detail: `${noProvider(uuid)}: ${noProvider(uuid)}` };
      case "allocate":
        return { status: 400, detail: `Allocation for resource provider '${uuid}' that does not exist.` };
      case "reshape":
        return {
          status: 400,
          detail: `Resource provider ${uuid} in inventories not found: ${noProvider(uuid)}`,
          code: ErrorCode.RESOURCE_PROVIDER_NOT_FOUND,
        };
    }
  },

  GenerationConflict: ({ stale }) => {
    const code = ErrorCode.CONCURRENT_UPDATE;
    if (stale.of === "consumer") {
      const actual = stale.actual === null ? "null" : stale.actual;
      const given = stale.given === null ? "None" : stale.given;
      return { status: 409, detail: `consumer generation conflict - expected ${actual} but got ${given}`, code };
    }
    switch (stale.writing) {
      case "inventories":
        return { status: 409, detail: "resource provider generation conflict", code };
      case "traits":
      case "aggregates":
        return { status: 409, detail: GENERATION_ALREADY_CHANGED, code };
      case "reshape":
        return {
          status: 409,
          detail: `resource provider generation conflict for provider ${stale.uuid}: actual: ${stale.actual}, given: ${stale.given}`,
          code,
        };
    }
  },

  ConcurrentUpdate: ({ during }) => {
    const code = ErrorCode.CONCURRENT_UPDATE;
    if (during === "allocate") {
      return {
        status: 409,
        detail: `Inventory and/or allocations changed while attempting to allocate: ${concurrently("resource provider data")}`,
        code,
      };
    }
    if (during === "reshape") return { status: 409, detail: `update conflict: ${concurrently("data")}`, code };
    return { status: 409, detail: concurrently("data"), code };
  },

  DatabaseUnavailable: ({ failure }) => ({
    status: 503,
    // A standby, or a primary being demoted: the operator's URL (or the failover) is the thing to look at.
    detail:
      sqlState(failure) === "25006"
        ? "The database takes no writes: it is a standby, or a primary being failed over; retry later."
        : "The database is unavailable or out of connections; retry later.",
    headers: { "retry-after": RETRY_AFTER_SECONDS },
  }),

  UnstorableValue: ({ problem }) => ({
    status: 400,
    detail:
      problem === "characters"
        ? "The request contains characters that cannot be stored (such as NUL)."
        : "A number in the request is out of range.",
  }),

  InvalidProvider: ({ operation, uuid, providerName: name, problem }) => {
    const reason = TREE_PROBLEMS[problem];
    if (operation === "create") {
      return { status: 400, detail: `Unable to create resource provider "${name}", ${uuid}: Object action create failed because: ${reason}` };
    }
    // Placement reports a missing new parent from its create check, even on an update.
    const action = problem === "parent missing" ? "create" : "update";
    return { status: 400, detail: `Unable to save resource provider ${uuid}: Object action ${action} failed because: ${reason}` };
  },

  DuplicateProvider: ({ operation, clash }) => {
    const code = ErrorCode.DUPLICATE_NAME;
    if (operation === "update") return { status: 409, detail: `Conflicting resource provider ${clash.name} already exists.`, code };
    const parts = [...(clash.uuid === undefined ? [] : [`uuid: ${clash.uuid}`]), ...(clash.name === undefined ? [] : [`name: ${clash.name}`])];
    return { status: 409, detail: `Conflicting resource provider ${parts.join(", ")} already exists.`, code };
  },

  CannotDeleteParent: ({ uuid }) => ({
    status: 409,
    detail: `Unable to delete parent resource provider ${uuid}: It has child resource providers.`,
    code: ErrorCode.PROVIDER_CANNOT_DELETE_PARENT,
  }),

  ProviderInUse: ({ uuid }) => ({
    status: 409,
    detail: `Unable to delete resource provider ${uuid}: Resource provider has allocations.`,
    code: ErrorCode.PROVIDER_IN_USE,
  }),

  ClassNotFound: ({ className, lookup }) => classNotFound(className, lookup),

  DuplicateClass: ({ className: name, operation }) => ({
    status: 409,
    detail: operation === "create" ? `Conflicting resource class already exists: ${name}` : `Resource class already exists: ${name}`,
  }),

  StandardNameImmutable: ({ of, value: name, operation }) => {
    if (of === "trait") return { status: 400, detail: `Cannot delete standard trait ${name}.` };
    if (operation === "update") return { status: 400, detail: `Cannot update standard resource class ${name}` };
    return { status: 400, detail: `Error in delete resource class: Cannot delete standard resource class ${name}.` };
  },

  ClassInUse: ({ className: name }) => ({
    status: 409,
    detail: `Error in delete resource class: Cannot delete resource class ${name}. Class is in use in inventory.`,
  }),

  TraitNotFound: ({ names, during }) => {
    const noTraits = `No such trait(s): ${names.join(", ")}.`;
    switch (during) {
      case "lookup":
        return { status: 404, detail: noTraits };
      case "query":
        return { status: 400, detail: noTraits };
      case "required":
        return { status: 400, detail: `Invalid trait(s) in "required" parameter: ${noTraits}` };
      case "provider traits":
        return { status: 400, detail: `No such trait ${names.join(", ")}` };
    }
  },

  TraitInUse: ({ trait: name }) => ({ status: 409, detail: `The trait ${name} is in use by a resource provider.` }),

  InventoryInUse: ({ provider, classes, during }) => {
    const inUse = `Inventory for '${classes.join(", ")}' on resource provider '${provider}' in use.`;
    switch (during) {
      case "replace":
        return { status: 409, detail: `update conflict: ${inUse}`, code: ErrorCode.INVENTORY_INUSE };
      case "delete all":
        return { status: 409, detail: inUse, code: ErrorCode.INVENTORY_INUSE };
      case "delete one":
        // Placement reports this one with the concurrent-update code, not inventory.inuse.
        return { status: 409, detail: `Unable to delete inventory of class ${classes.join(", ")}: ${inUse}`, code: ErrorCode.CONCURRENT_UPDATE };
    }
  },

  InventoryExists: ({ provider, resourceClass }) => ({
    status: 409,
    detail: `Update conflict: Inventory for '${resourceClass}' on resource provider '${provider}' already exists.`,
    code: ErrorCode.CONCURRENT_UPDATE,
  }),

  InventoryNotFound: ({ provider, resourceClass, during }) => {
    switch (during) {
      case "show":
        return { status: 404, detail: `No inventory of class ${resourceClass} for ${provider}` };
      case "update":
        return {
          status: 400,
          detail: `No inventory record with resource class for resource provider ${provider}: No inventory of class ${resourceClass} found.`,
        };
      case "delete": {
        const reason = `No inventory of class ${resourceClass} found for delete`;
        return { status: 404, detail: `${reason}: ${reason}` };
      }
    }
  },

  InvalidInventory: ({ provider, resourceClass, reservedMayEqualTotal, during }) => {
    const rule = reservedMayEqualTotal ? "greater than total" : "greater than or equal to total";
    const problem = `Invalid inventory for '${resourceClass}' on resource provider '${provider}'. The reserved value is ${rule}.`;
    if (during === "reshape") return { status: 409, detail: unableToAllocate(problem) };
    return { status: 400, detail: `Unable to ${during} inventory for resource provider ${provider}: ${problem}` };
  },

  CapacityExceeded: ({ refusal }) => {
    if (refusal.problem === "no inventory") {
      return {
        status: 409,
        detail: unableToAllocate(`Inventory for '${refusal.classes.join(", ")}' on resource provider '${refusal.providers.join(", ")}' invalid.`),
      };
    }
    const violation = refusal.problem === "capacity" ? "exceed the capacity" : "violate inventory constraints";
    return {
      status: 409,
      detail: unableToAllocate(
        `Unable to create allocation for '${refusal.resourceClass}' on resource provider '${refusal.provider}'. The requested amount would ${violation}.`,
      ),
    };
  },

  AllocationsNotFound: ({ consumer }) => ({ status: 404, detail: `No allocations for consumer '${consumer}'` }),

  // The extensions' own refusals (POST /claims, GET /changes); no Placement wording to match.
  ClaimRefused: ({ refusal }) => {
    switch (refusal.reason) {
      case "no candidates":
        return { status: 409, detail: "Unable to claim: no allocation candidates match the request." };
      case "no fit":
        return { status: 409, detail: `Unable to claim: none of the ${refusal.considered} allocation candidates had the capacity when checked under lock.` };
      case "partial":
        return {
          status: 409,
          detail: `Unable to claim: only ${refusal.placed} of ${refusal.wanted} consumers fit, and all_or_nothing is set; nothing was claimed.`,
        };
      case "busy":
        return {
          status: 409,
          detail: "Unable to claim: the candidates that fit stayed busy with concurrent writes. Please retry.",
          code: ErrorCode.CONCURRENT_UPDATE,
        };
    }
  },

  CursorTooOld: ({ cursor, prunedThrough }) => ({
    status: 410,
    detail: `Cursor ${cursor} is too old: changes up to ${prunedThrough} are no longer kept. Resync: take a new cursor (GET /changes without since), read the state, then follow the feed from that cursor.`,
  }),

  // Placement has no such bound (an extension's refusal): the default code.
  AnswerTooLarge: ({ maxBytes }) => ({
    status: 400,
    detail: `The allocation candidates answer would be larger than ${maxBytes} bytes, this server's bound on one answer (PLACEMENT_MAX_ANSWER_BYTES, [placement] max_answer_bytes). Ask for fewer candidates with the limit parameter.`,
  }),

  AnswersBusy: ({ budgetBytes }) => ({
    status: 503,
    detail: `The server is writing other large allocation candidates answers and holds ${budgetBytes} bytes of them at the most (twice PLACEMENT_MAX_ANSWER_BYTES); retry later, or ask for fewer candidates with the limit parameter.`,
    headers: { "retry-after": RETRY_AFTER_SECONDS },
  }),
};

/** The answer for a domain error. */
export function domainErrorAnswer(err: DomainError): PlacementError {
  const row = ROWS[err.kind as AnyDomainError["kind"]] as ((e: DomainError) => Answer) | undefined;
  if (!row) throw new Error(`no row in the error table for ${err.kind}`);
  const answer = row(err);
  const error = new PlacementError(answer.status, answer.detail, answer.code, answer.headers);
  return answer.pastHandler ? pastHandler(error) : error;
}

/**
 * What the client is told about any failure that has a meaning: a
 * PlacementError as it is, a domain error or a meaningful database failure
 * from the table. Undefined for anything else (a bug: the caller answers 500).
 */
export function placementErrorFor(err: unknown): PlacementError | undefined {
  if (err instanceof PlacementError) return err;
  const domain = err instanceof DomainError ? err : databaseFault(err);
  return domain ? domainErrorAnswer(domain) : undefined;
}

/** The domain errors the table has a row for (the union type makes the compiler check it; tests check the exports). */
export const TABLE_KINDS: readonly string[] = Object.keys(ROWS);
