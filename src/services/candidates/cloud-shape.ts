/**
 * Whether a cloud is flat (every provider a tree of one, none sharing), the
 * one question that decides which plan can answer a request. It is asked in
 * SQL, inside the snapshot that reads the candidates (the engine's name
 * lookup and the cloud view's full read add SHAPE_ROWS; the view then
 * follows each provider's parent and traits), and answered here only.
 */
export const SHARING_TRAIT = "MISC_SHARES_VIA_AGGREGATE";

export interface CloudShape {
  /** Some provider has a parent. */
  hasTrees: boolean;
  /** Some provider shares its inventory through aggregates (has MISC_SHARES_VIA_AGGREGATE). */
  hasSharing: boolean;
}

export const isFlat = (shape: CloudShape): boolean => !shape.hasTrees && !shape.hasSharing;

/** The kinds of SHAPE_ROWS' rows: some provider has a parent; some provider shares. */
export const SHAPE_ROW = { nested: "nested", sharing: "sharing" } as const;

/**
 * Rows `('nested', id, '')` when some provider has a parent and
 * `('sharing', id, '')` when some provider shares: three columns, to be
 * UNIONed into a statement's name rows. Each stops at its first row.
 */
export const SHAPE_ROWS = `(SELECT '${SHAPE_ROW.nested}', id, '' FROM resource_providers WHERE parent_provider_id IS NOT NULL LIMIT 1)
      UNION ALL (SELECT '${SHAPE_ROW.sharing}', rpt.resource_provider_id, '' FROM resource_provider_traits rpt
                 WHERE rpt.trait_id = (SELECT id FROM traits WHERE name = '${SHARING_TRAIT}') LIMIT 1)`;

/** Reads one SHAPE_ROWS row into `shape`; false when the kind is not one of them. */
export function readShapeRow(kind: string, shape: CloudShape): boolean {
  if (kind === SHAPE_ROW.nested) shape.hasTrees = true;
  else if (kind === SHAPE_ROW.sharing) shape.hasSharing = true;
  else return false;
  return true;
}
