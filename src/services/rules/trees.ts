/**
 * in_tree and the root filters, written once. in_tree<N>=<uuid> keeps a
 * group's resources within the tree of that provider: a provider qualifies
 * when its root is the named provider's root (on a flat cloud every provider
 * is its own root, so it is the provider itself). As in Placement it narrows
 * only groups that ask for resources. root_required / root_forbidden are a
 * trait expression (memberships.ts) on the root of each candidate's tree.
 */
import type { MembershipExpression } from "./memberships.js";

/** The provider whose root is `rootId` is within the tree rooted at `treeRootId` (undefined: no in_tree). */
export const inTree = (rootId: number, treeRootId: number | undefined): boolean => treeRootId === undefined || rootId === treeRootId;

/** SQL: the provider whose root id is `rootIdSql` is within the tree rooted at `treeRootSql` (SQL expressions). */
export const inTreeSql = (rootIdSql: string, treeRootSql: string): string => `${rootIdSql} = ${treeRootSql}`;

/** The root filters as a trait expression over trait ids. */
export const rootTraitExpression = <T = number>(required: T[], forbidden: T[]): MembershipExpression<T> => ({
  anyOf: required.map((t) => [t]),
  forbidden,
});
