/** Why a request was answered 409, for placement_conflicts_total. */
import { PlacementError } from "../http/errors.js";
import type { ConflictKind } from "./metrics.js";

export function conflictKind(err: unknown): ConflictKind {
  if (!(err instanceof PlacementError)) return "concurrent_update";
  const detail = err.detail;
  if (detail.includes("Unable to allocate inventory")) return "capacity";
  if (detail.includes("consumer generation conflict")) return "consumer_generation";
  if (detail.includes("resource provider generation conflict")) return "provider_generation";
  if (detail.includes("concurrently updated")) return "concurrent_update";
  return "other";
}
