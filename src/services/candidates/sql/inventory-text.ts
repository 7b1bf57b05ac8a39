/**
 * The one text format of inventory rows, shared by every statement that
 * sends inventories as text (the engine's tree loads, sql.ts; the cloud
 * view's reads, cloud-view.ts): one space-separated run of fields per
 * inventory, in the order of INVENTORY_FIELDS. The statement's text is
 * built from that list and the reader reads in the same order, so the two
 * cannot disagree. Texts rather than rows because the driver's parsing of
 * thousands of rows into objects cost several times more than reading the
 * texts; every field but allocation_ratio is a non-negative integer, and
 * float8's text form is exact.
 */
import { capacityOf } from "../../rules/capacity.js";
import type { TreeInventory } from "./tree-loads.js";

/** The inventories columns each inventory's text gives, in order. */
const INVENTORY_FIELDS = ["resource_class_id", "total", "reserved", "allocation_ratio", "used", "min_unit", "max_unit", "step_size"] as const;

/** SQL: the text of the inventories row `inv` (an alias). */
export const inventoryTextSql = (inv: string): string => `concat_ws(' ', ${INVENTORY_FIELDS.map((f) => `${inv}.${f}`).join(", ")})`;

/** Reads one inventory's text (INVENTORY_FIELDS' order) from `w`, for the provider `providerId`. */
export function readInventory(w: Words, providerId: number): TreeInventory {
  const resourceClassId = w.int();
  const total = w.int();
  const reserved = w.int();
  const allocationRatio = Number(w.word());
  return {
    providerId,
    resourceClassId,
    capacity: capacityOf({ total, reserved, allocationRatio }),
    used: w.int(),
    minUnit: w.int(),
    maxUnit: w.int(),
    stepSize: w.int(),
  };
}

/**
 * Reads a space-separated text word by word, integers straight from the
 * characters: split(" ") made a string of every number, which the collector
 * then had to sweep.
 */
export class Words {
  private at = 0;
  private readonly text: string;

  constructor(text: string | null | undefined) {
    this.text = text ?? "";
  }

  more(): boolean {
    return this.at < this.text.length;
  }

  /** A non-negative integer (ids, amounts, usage). */
  int(): number {
    let n = 0;
    let c = this.text.charCodeAt(this.at);
    while (c >= 48 && c <= 57) {
      n = n * 10 + (c - 48);
      c = this.text.charCodeAt(++this.at);
    }
    this.at++;
    return n;
  }

  word(): string {
    let end = this.text.indexOf(" ", this.at);
    if (end < 0) end = this.text.length;
    const w = this.text.slice(this.at, end);
    this.at = end + 1;
    return w;
  }
}
