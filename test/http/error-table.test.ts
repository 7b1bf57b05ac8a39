/**
 * The error table: every domain error class has a row, and database
 * failures are answered by their SQLSTATE's meaning wherever drizzle wraps them.
 */
import { describe, expect, it } from "vitest";
import * as errors from "../../src/services/errors.js";
import { placementErrorFor, TABLE_KINDS } from "../../src/http/error-table.js";
import { PlacementError } from "../../src/http/errors.js";

/** An error as pg raises it, wrapped the way drizzle wraps it. */
const dbError = (code: string) => Object.assign(new Error("Failed query"), { cause: Object.assign(new Error("pg"), { code }) });

describe("the error table", () => {
  it("has a row for every domain error class", () => {
    const classes = Object.entries(errors).filter(
      ([, v]) => typeof v === "function" && v.prototype instanceof errors.DomainError,
    );
    expect(classes.length).toBeGreaterThan(15);
    for (const [name] of classes) expect(TABLE_KINDS, name).toContain(name);
  });

  it("words a domain error from its facts", () => {
    const answer = placementErrorFor(new errors.ProviderNotFound("abc", "list usages"));
    expect(answer?.status).toBe(404);
    expect(answer?.detail).toBe("No resource provider with uuid abc found: No resource provider with uuid abc found");
  });

  it.each([
    ["40P01", 409, "placement.concurrent_update"],
    ["40001", 409, "placement.concurrent_update"],
    ["57P01", 503, "placement.undefined_code"],
    ["57P02", 503, "placement.undefined_code"],
    ["25006", 503, "placement.undefined_code"],
    ["08006", 503, "placement.undefined_code"],
    ["ECONNREFUSED", 503, "placement.undefined_code"],
    ["22021", 400, "placement.undefined_code"],
    ["22003", 400, "placement.undefined_code"],
  ])("answers a database failure %s with %i", (code, status, errorCode) => {
    const answer = placementErrorFor(dbError(code));
    expect(answer).toBeInstanceOf(PlacementError);
    expect(answer?.status).toBe(status);
    expect(answer?.code).toBe(errorCode);
  });

  it("leaves other failures to the 500 handler", () => {
    expect(placementErrorFor(dbError("42P01"))).toBeUndefined();
    expect(placementErrorFor(new TypeError("bug"))).toBeUndefined();
  });

  it("makes answers without a stack trace, and leaves every other error's alone", () => {
    const frames = (err: Error) => (err.stack ?? "").split("\n").filter((line) => line.trimStart().startsWith("at ")).length;
    const refusal = new errors.ClaimRefused({ reason: "no candidates" });
    expect(refusal.message).toBe("claim refused (no candidates)");
    expect(frames(refusal)).toBe(0);
    expect(frames(placementErrorFor(refusal)!)).toBe(0);
    expect(frames(new PlacementError(400, "bad"))).toBe(0);
    // The limit is put back after each: a bug's stack is what the 500 handler logs.
    expect(frames(new TypeError("bug"))).toBeGreaterThan(0);
  });
});
