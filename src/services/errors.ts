/**
 * What services throw when they refuse a request: one class per refusal,
 * carrying the facts (uuids, names, classes, what was being done) and nothing
 * about HTTP. The one error table of the HTTP layer (error-table.ts) turns
 * each into Placement's status, error code and wording; no service writes
 * that wording itself.
 *
 * `during` says which operation refused, where Placement words the same
 * refusal differently per operation (a missing resource class is a 404 on
 * one path and a 400 with a prefix on another).
 */
import { AnswerError } from "../answer-error.js";
import { sqlStateMeaning } from "../db/sql-state.js";

/** Made without a stack trace, as every answer is (answer-error.ts). */
export abstract class DomainError extends AnswerError {
  /** The class's name as a literal type: what the error table is keyed by. */
  abstract readonly kind: string;
}

export type ProviderLookup =
  | "lookup"
  | "delete"
  | "list inventories"
  | "list allocations"
  | "list usages"
  | "list traits"
  /** An allocation names a provider that does not exist. */
  | "allocate"
  /** A reshape's inventories name a provider that does not exist. */
  | "reshape";

export class ProviderNotFound extends DomainError {
  readonly kind = "ProviderNotFound";
  constructor(
    readonly uuid: string,
    readonly during: ProviderLookup = "lookup",
  ) {
    super(`resource provider ${uuid} not found (${during})`);
  }
}

/** What a provider generation protects in the write that found it stale. */
export type ProviderPart = "inventories" | "traits" | "aggregates" | "reshape";

export type StaleGeneration =
  /** `actual` is unknown when the compare-and-bump itself found the row changed. */
  | { of: "provider"; uuid: string; writing: ProviderPart; given: number; actual?: number }
  /** null: the consumer does not exist (actual) or the writer said it is new (given). */
  | { of: "consumer"; uuid: string; given: number | null; actual: number | null };

/** A writer sent a generation the provider or consumer no longer has. */
export class GenerationConflict extends DomainError {
  readonly kind = "GenerationConflict";
  constructor(readonly stale: StaleGeneration) {
    super(`${stale.of} ${stale.uuid} generation conflict: given ${stale.given}, actual ${stale.actual}`);
  }
}

/**
 * PostgreSQL aborted the write as a deadlock or serialization failure on
 * every retry: the data really kept changing under it, and whether to try
 * again is the client's call.
 */
export class ConcurrentUpdate extends DomainError {
  readonly kind = "ConcurrentUpdate";
  constructor(readonly during?: "allocate" | "reshape") {
    super(`concurrent update${during ? ` (${during})` : ""}`);
  }
}

/** The database cannot take the request now (unreachable, restarting, out of connections). */
export class DatabaseUnavailable extends DomainError {
  readonly kind = "DatabaseUnavailable";
  constructor(readonly failure: unknown) {
    super("database unavailable");
  }
}

/** A value the client sent cannot be stored (NUL in text) or is beyond a column's range. */
export class UnstorableValue extends DomainError {
  readonly kind = "UnstorableValue";
  constructor(readonly problem: "characters" | "out of range") {
    super(`unstorable value (${problem})`);
  }
}

export type ProviderTreeProblem =
  | "name required"
  | "own parent"
  | "parent missing"
  | "re-parenting not allowed"
  | "un-parenting not allowed"
  | "loop";

/** A provider create or update refused for its name or its place in the tree. */
export class InvalidProvider extends DomainError {
  readonly kind = "InvalidProvider";
  constructor(
    readonly operation: "create" | "update",
    readonly uuid: string,
    readonly providerName: string,
    readonly problem: ProviderTreeProblem,
  ) {
    super(`cannot ${operation} resource provider ${uuid}: ${problem}`);
  }
}

/** Another provider already has this uuid and/or name (only `name` on an update). */
export class DuplicateProvider extends DomainError {
  readonly kind = "DuplicateProvider";
  constructor(
    readonly operation: "create" | "update",
    readonly clash: { uuid?: string; name?: string },
  ) {
    super(`conflicting resource provider ${JSON.stringify(clash)}`);
  }
}

export class CannotDeleteParent extends DomainError {
  readonly kind = "CannotDeleteParent";
  constructor(readonly uuid: string) {
    super(`resource provider ${uuid} has children`);
  }
}

export class ProviderInUse extends DomainError {
  readonly kind = "ProviderInUse";
  constructor(readonly uuid: string) {
    super(`resource provider ${uuid} has allocations`);
  }
}

export type ClassLookup =
  | { in: "lookup" }
  /** A `resources` query parameter. */
  | { in: "query" }
  | { in: "inventories"; provider: string }
  | { in: "new inventory"; provider: string }
  | { in: "inventory update" }
  | { in: "inventory delete" }
  /** `consumer` when the write was for the one consumer the request named (PUT /allocations/{uuid}). */
  | { in: "allocations"; consumer?: string }
  | { in: "reshape" };

export class ClassNotFound extends DomainError {
  readonly kind = "ClassNotFound";
  constructor(
    readonly className: string,
    readonly lookup: ClassLookup = { in: "lookup" },
  ) {
    super(`resource class ${className} not found (${lookup.in})`);
  }
}

export class DuplicateClass extends DomainError {
  readonly kind = "DuplicateClass";
  constructor(
    readonly className: string,
    readonly operation: "create" | "rename",
  ) {
    super(`resource class ${className} already exists`);
  }
}

/** Standard resource classes and traits are seeded and never change. */
export class StandardNameImmutable extends DomainError {
  readonly kind = "StandardNameImmutable";
  constructor(
    readonly of: "resource class" | "trait",
    readonly value: string,
    readonly operation: "update" | "delete",
  ) {
    super(`cannot ${operation} standard ${of} ${value}`);
  }
}

export class ClassInUse extends DomainError {
  readonly kind = "ClassInUse";
  constructor(readonly className: string) {
    super(`resource class ${className} is in use`);
  }
}

export type TraitLookup = "lookup" | "query" | "required" | "provider traits";

export class TraitNotFound extends DomainError {
  readonly kind = "TraitNotFound";
  constructor(
    readonly names: readonly string[],
    readonly during: TraitLookup = "lookup",
  ) {
    super(`no such trait(s) ${names.join(", ")} (${during})`);
  }
}

export class TraitInUse extends DomainError {
  readonly kind = "TraitInUse";
  constructor(readonly trait: string) {
    super(`trait ${trait} is in use`);
  }
}

/** Removing inventory that allocations still use. */
export class InventoryInUse extends DomainError {
  readonly kind = "InventoryInUse";
  constructor(
    readonly provider: string,
    readonly classes: readonly string[],
    /** replace: PUT of the whole inventory (also reshaping); delete one: DELETE of one class. */
    readonly during: "replace" | "delete all" | "delete one",
  ) {
    super(`inventory ${classes.join(", ")} of ${provider} in use`);
  }
}

export class InventoryExists extends DomainError {
  readonly kind = "InventoryExists";
  constructor(
    readonly provider: string,
    readonly resourceClass: string,
  ) {
    super(`inventory ${resourceClass} of ${provider} exists`);
  }
}

export class InventoryNotFound extends DomainError {
  readonly kind = "InventoryNotFound";
  constructor(
    readonly provider: string,
    readonly resourceClass: string,
    readonly during: "show" | "update" | "delete",
  ) {
    super(`no inventory ${resourceClass} of ${provider}`);
  }
}

/** An inventory whose reserved amount leaves no (or negative) capacity. */
export class InvalidInventory extends DomainError {
  readonly kind = "InvalidInventory";
  constructor(
    readonly provider: string,
    readonly resourceClass: string,
    /** From 1.26 reserved may equal total. */
    readonly reservedMayEqualTotal: boolean,
    readonly during: "create" | "update" | "reshape",
  ) {
    super(`invalid inventory ${resourceClass} of ${provider}`);
  }
}

/** Allocations the providers' inventories do not allow. */
export type AllocationProblem =
  /** No inventory of the classes on the providers (all classes of the request when a provider has none at all). */
  | { problem: "no inventory"; classes: readonly string[]; providers: readonly string[] }
  /** An amount outside min_unit..max_unit or not a multiple of step_size. */
  | { problem: "constraints"; resourceClass: string; provider: string }
  | { problem: "capacity"; resourceClass: string; provider: string };

export class CapacityExceeded extends DomainError {
  readonly kind = "CapacityExceeded";
  constructor(readonly refusal: AllocationProblem) {
    super(`unable to allocate (${refusal.problem})`);
  }
}

export class AllocationsNotFound extends DomainError {
  readonly kind = "AllocationsNotFound";
  constructor(readonly consumer: string) {
    super(`consumer ${consumer} holds no allocations`);
  }
}

/** Why POST /claims (an extension) claimed nothing. */
export type ClaimRefusal =
  | { reason: "no candidates" }
  /** Candidates were found, and none fitted when checked under its providers' locks. */
  | { reason: "no fit"; considered: number }
  /** all_or_nothing, and only `placed` of `wanted` consumers fitted. */
  | { reason: "partial"; placed: number; wanted: number }
  /** Candidates that fitted stayed locked by other writers through every retry. */
  | { reason: "busy" };

export class ClaimRefused extends DomainError {
  readonly kind = "ClaimRefused";
  constructor(readonly refusal: ClaimRefusal) {
    super(`claim refused (${refusal.reason})`);
  }
}

/** GET /changes (an extension): the cursor is older than what the feed keeps. */
export class CursorTooOld extends DomainError {
  readonly kind = "CursorTooOld";
  constructor(
    readonly cursor: number,
    readonly prunedThrough: number,
  ) {
    super(`cursor ${cursor} is below the feed's horizon ${prunedThrough}`);
  }
}

/**
 * GET /allocation_candidates (without a limit small enough): the answer
 * would be larger than the server's bound on one answer, found before any
 * of it was sent.
 */
export class AnswerTooLarge extends DomainError {
  readonly kind = "AnswerTooLarge";
  constructor(readonly maxBytes: number) {
    super(`allocation candidates answer larger than ${maxBytes} bytes`);
  }
}

/**
 * GET /allocation_candidates: the answers a worker is writing at once
 * would hold more than its budget for them (twice the bound on one answer).
 */
export class AnswersBusy extends DomainError {
  readonly kind = "AnswersBusy";
  constructor(readonly budgetBytes: number) {
    super(`allocation candidates answers being written pass ${budgetBytes} bytes`);
  }
}

/** Every domain error, for the error table (which needs a row for each). */
export type AnyDomainError =
  | ProviderNotFound
  | GenerationConflict
  | ConcurrentUpdate
  | DatabaseUnavailable
  | UnstorableValue
  | InvalidProvider
  | DuplicateProvider
  | CannotDeleteParent
  | ProviderInUse
  | ClassNotFound
  | DuplicateClass
  | StandardNameImmutable
  | ClassInUse
  | TraitNotFound
  | TraitInUse
  | InventoryInUse
  | InventoryExists
  | InventoryNotFound
  | InvalidInventory
  | CapacityExceeded
  | AllocationsNotFound
  | ClaimRefused
  | CursorTooOld
  | AnswerTooLarge
  | AnswersBusy;

/**
 * The domain error a database failure stands for (see SQLSTATE_MEANINGS),
 * or undefined for one that is a bug of ours.
 */
export function databaseFault(err: unknown): DomainError | undefined {
  switch (sqlStateMeaning(err)) {
    case "retry":
      return new ConcurrentUpdate();
    case "unavailable":
      return new DatabaseUnavailable(err);
    case "unstorable":
      return new UnstorableValue("characters");
    case "out of range":
      return new UnstorableValue("out of range");
    case undefined:
      return undefined;
  }
}
