/**
 * Placement's capacity rule, written once: an inventory's capacity is
 * Python's int((total - reserved) * allocation_ratio); it can take `amount`
 * more when min_unit <= amount <= max_unit, amount is a multiple of
 * step_size, and used + amount <= capacity. Several amounts of one class on
 * one provider (request groups merged onto it, or several allocations in one
 * write) are checked as Placement's merge does: each amount against min_unit
 * and step_size, their sum against max_unit and capacity.
 *
 * In memory on Room (what every path loads per inventory), and as SQL text
 * over an `inventories` row alias for the statements that filter in
 * PostgreSQL and for the audit. Both truncate toward zero as Python's int()
 * does: floor() would differ for the negative products a negative ratio
 * gives (Placement accepts any finite ratio), and comparing with the product
 * unrounded would call a provider using 0 of a capacity of int(-0.5) = 0
 * over it.
 */

/** Capacity of an inventory: Python's int((total - reserved) * allocation_ratio). */
export const capacityOf = (inv: { total: number; reserved: number; allocationRatio: number }): number =>
  // + 0 turns the -0 that truncating a small negative product gives into 0.
  Math.trunc((inv.total - inv.reserved) * inv.allocationRatio) + 0;

/** What the rule needs of an inventory row. */
export interface Room {
  capacity: number;
  used: number;
  minUnit: number;
  maxUnit: number;
  stepSize: number;
}

/** One amount obeys the inventory's units: min_unit <= amount <= max_unit, a multiple of step_size. */
export const unitsAllow = (inv: Room, amount: number): boolean => amount >= inv.minUnit && amount <= inv.maxUnit && amount % inv.stepSize === 0;

/** `total` more fits under the capacity (with what is used). */
export const hasRoomFor = (inv: Room, total: number): boolean => inv.used + total <= inv.capacity;

/** The inventory can take `amount` more on its own. */
export const canTake = (inv: Room, amount: number): boolean => unitsAllow(inv, amount) && hasRoomFor(inv, amount);

/** Amounts already checked one by one (unitsAllow) that together add up to `total`: the merge's check of the sum. */
export const canTakeSum = (inv: Pick<Room, "capacity" | "used" | "maxUnit">, total: number): boolean =>
  total <= inv.maxUnit && inv.used + total <= inv.capacity;

/**
 * The inventory can take amounts whose smallest is `smallest`, whose sum is
 * `sum` and whose gcd is `gcd` (each amount is a multiple of step_size iff
 * their gcd is): the merge's rule in one check.
 */
export const canTakeAmounts = (inv: Room, { smallest, sum, gcd }: { smallest: number; sum: number; gcd: number }): boolean =>
  smallest >= inv.minUnit && gcd % inv.stepSize === 0 && canTakeSum(inv, sum);

/** SQL: the capacity of the inventory row `inv`, as an integer. */
export const capacitySql = (inv: string): string => `trunc((${inv}.total - ${inv}.reserved) * ${inv}.allocation_ratio)::bigint`;

/** SQL: one amount (an SQL expression) obeys the units of the inventory row `inv`. */
export const unitsAllowSql = (inv: string, amount: string): string =>
  `${inv}.min_unit <= ${amount} AND ${inv}.max_unit >= ${amount} AND ${amount} % ${inv}.step_size = 0`;

/** SQL: `total` more fits under the capacity of the row `inv`, whose usage is `used` (default: its `used` column). */
export const hasRoomForSql = (inv: string, total: string, used = `${inv}.used`): string => `${used} + ${total} <= ${capacitySql(inv)}`;

/** SQL: the inventory row `inv` holds more than its capacity (its ratio or reserved changed under its allocations). */
export const overCapacitySql = (inv: string): string => `NOT (${hasRoomForSql(inv, "0")})`;

/** SQL: the inventory row `inv` can take the one amount `amount` (an SQL expression). */
export const canTakeOneSql = (inv: string, amount: string): string => `${unitsAllowSql(inv, amount)} AND ${hasRoomForSql(inv, amount)}`;
