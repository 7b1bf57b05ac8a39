/**
 * The answer paths in order of preference, and the choice among them: the
 * first path that takes a request answers it (as hono's SmartRouter tries
 * its routers in turn). The cloud view's paths come first, since they answer
 * from memory without reading every inventory row; the database's paths
 * answer what the view declines (an unknown name, a cloud too large to copy,
 * a resourceless group on a flat cloud), and every caller with a transaction
 * of its own (candidatesInPreferenceOrder).
 */
import { flatSourcePath } from "./flat-source.js";
import { flatViewPath } from "./flat-view.js";
import { generalPath } from "./general.js";
import type { AnswerPath, DatabasePath, ViewPath } from "./path.js";
import { treeViewPath } from "./tree-view.js";

export const DATABASE_PATHS: readonly DatabasePath[] = [flatSourcePath, generalPath];

export const PREFERENCE: readonly AnswerPath[] = [flatViewPath, treeViewPath(), ...DATABASE_PATHS];

/** The first of `paths` that takes the request, with what taking it gave; undefined when none does. */
export function firstTaking<P extends AnswerPath, A>(paths: readonly P[], take: (path: P) => A | undefined): { path: P; taken: A } | undefined {
  for (const path of paths) {
    const taken = take(path);
    if (taken !== undefined) return { path, taken };
  }
  return undefined;
}

/** The paths that answer from the cloud view, and those that answer from the database (a service splits its list once). */
export const viewPaths = (paths: readonly AnswerPath[]): ViewPath[] => paths.filter((p): p is ViewPath => p.over === "view");
export const databasePaths = (paths: readonly AnswerPath[]): DatabasePath[] => paths.filter((p): p is DatabasePath => p.over === "database");
