/**
 * The database's flat source as a path: on a flat cloud, one filter query
 * over resource_providers in id order (../flat-source.ts). It declines a
 * cloud with trees or sharing providers.
 */
import { isFlat } from "../cloud-shape.js";
import { flatSourceCandidates } from "../flat-source.js";
import type { DatabasePath } from "./path.js";

export const flatSourcePath: DatabasePath = {
  name: "flat-source",
  over: "database",
  take: (tx, query, names, engine) => (isFlat(names) ? () => flatSourceCandidates(tx, query, names, engine) : undefined),
};
