/**
 * The general plan over the database's reads as a path (../general-source.ts,
 * ../tree-reads.ts): any cloud, any request whose names are known. It never
 * declines, so it is the last resort of every list of paths.
 */
import { generalCandidates } from "../general-source.js";
import { sqlTreeReads } from "../tree-reads.js";
import type { DatabasePath } from "./path.js";

export const generalPath: DatabasePath = {
  name: "general",
  over: "database",
  take: (tx, query, names, engine) => () => generalCandidates(sqlTreeReads(tx), query, names, engine),
};
