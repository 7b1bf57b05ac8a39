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

/**
 * Rows `('n', id, '')` when some provider has a parent and `('s', id, '')`
 * when some provider shares: three columns, to be UNIONed into a statement's
 * name rows. Each stops at its first row.
 */
export const SHAPE_ROWS = `(SELECT 'n', id, '' FROM resource_providers WHERE parent_provider_id IS NOT NULL LIMIT 1)
      UNION ALL (SELECT 's', rpt.resource_provider_id, '' FROM resource_provider_traits rpt
                 WHERE rpt.trait_id = (SELECT id FROM traits WHERE name = '${SHARING_TRAIT}') LIMIT 1)`;

/** Reads one SHAPE_ROWS row into `shape`; false when the kind is not one of them. */
export function readShapeRow(kind: string, shape: CloudShape): boolean {
  if (kind === "n") shape.hasTrees = true;
  else if (kind === "s") shape.hasSharing = true;
  else return false;
  return true;
}
