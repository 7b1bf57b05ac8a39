/**
 * Floats as Placement's JSON writes them. Python keeps a float a float in
 * JSON (`1.0`, `16.0`), where JSON.stringify writes `1` and `16`; a Python
 * client then gets an int. Only allocation_ratio is a float in Placement's API.
 */

/** Python's repr() of a float: shortest round-trip digits, `.0` on integers, exponent outside 1e-4..1e16. */
export function pythonFloatRepr(x: number): string {
  if (Number.isNaN(x)) return "NaN";
  if (!Number.isFinite(x)) return x > 0 ? "Infinity" : "-Infinity";
  const sign = x < 0 || Object.is(x, -0) ? "-" : "";
  const [mantissa, exp] = Math.abs(x).toExponential().split("e");
  const digits = mantissa.replace(".", "");
  const e = Number(exp);
  if (e < -4 || e >= 16) {
    const fraction = digits.length > 1 ? `.${digits.slice(1)}` : "";
    return `${sign}${digits[0]}${fraction}e${e < 0 ? "-" : "+"}${String(Math.abs(e)).padStart(2, "0")}`;
  }
  if (e < 0) return `${sign}0.${"0".repeat(-e - 1)}${digits}`;
  const whole = digits.slice(0, e + 1).padEnd(e + 1, "0");
  const fraction = digits.slice(e + 1) || "0";
  return `${sign}${whole}.${fraction}`;
}

const MARK = "@@python-float:";

/** A value for jsonText() to write as a Python float. */
export function pythonFloat(x: number): string {
  return `${MARK}${pythonFloatRepr(x)}@@`;
}

/** JSON.stringify, with every pythonFloat() value written as a bare number. */
export function jsonText(value: unknown): string {
  return JSON.stringify(value).replace(/"@@python-float:([^@"]+)@@"/g, "$1");
}
