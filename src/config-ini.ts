/**
 * Reading an oslo.config INI file the way oslo.config does, so an operator's
 * existing placement.conf means here what it meant to Placement:
 *   - `[section]` headers; `name = value` or `name: value`; names with `-` are the same as with `_`;
 *   - whole-line comments starting with `#` or `;` (a `#` later in a line is part of the value);
 *   - a value in matching single or double quotes loses the quotes;
 *   - an indented line continues the previous value (joined with a newline);
 *   - an option given twice in a section: the last one counts (no option read here is a MultiStrOpt);
 *   - `$name` / `${name}` / `${section.name}` are replaced by another option's value
 *     (from [DEFAULT] unless a section is named), `$$` is a literal `$`.
 */

export interface IniValue {
  value: string;
  line: number;
}

/** Section name -> option name -> its last value. */
export type IniSections = Map<string, Map<string, IniValue>>;

export class IniError extends Error {}

export function parseIni(text: string, file: string): IniSections {
  const sections: IniSections = new Map();
  let current: Map<string, IniValue> | undefined;
  let last: IniValue | undefined;
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i];
    const lineNo = i + 1;
    const trimmed = raw.trim();
    if (trimmed === "") {
      last = undefined;
      continue;
    }
    if (/^[#;]/.test(trimmed)) continue;
    if (/^\s/.test(raw) && last) {
      last.value = last.value === "" ? trimmed : `${last.value}\n${trimmed}`;
      continue;
    }
    if (trimmed.startsWith("[")) {
      const m = /^\[([^\]]+)\]$/.exec(trimmed);
      if (!m) throw new IniError(`${file}:${lineNo}: malformed section header "${trimmed}"`);
      const name = m[1].trim();
      current = sections.get(name) ?? new Map();
      sections.set(name, current);
      last = undefined;
      continue;
    }
    const m = /^([^=:\s][^=:]*?)\s*[=:]\s*(.*)$/.exec(trimmed);
    if (!m) throw new IniError(`${file}:${lineNo}: expected "name = value", found "${trimmed}"`);
    if (!current) throw new IniError(`${file}:${lineNo}: option "${m[1]}" before any [section]`);
    const entry = { value: unquote(m[2].trim()), line: lineNo };
    current.set(m[1].trim().replace(/-/g, "_"), entry);
    last = entry;
  }
  return sections;
}

function unquote(value: string): string {
  if (value.length >= 2 && (value[0] === '"' || value[0] === "'") && value[value.length - 1] === value[0]) {
    return value.slice(1, -1);
  }
  return value;
}

/** Replaces `$name`, `${name}` and `${section.name}` references; `$$` stays one `$`. */
export function interpolate(value: string, sections: IniSections, where: string, seen: Set<string> = new Set()): string {
  return value.replace(/\$(\$|\{([A-Za-z0-9_.-]+)\}|([A-Za-z0-9_]+))/g, (_whole, dollar: string, braced?: string, bare?: string) => {
    if (dollar === "$") return "$";
    const ref = (braced ?? bare)!;
    const dot = ref.lastIndexOf(".");
    const [section, option] = dot > 0 ? [ref.slice(0, dot), ref.slice(dot + 1)] : ["DEFAULT", ref];
    const key = `${section}.${option}`;
    const target = sections.get(section)?.get(option.replace(/-/g, "_"));
    if (!target) throw new IniError(`${where}: refers to $${ref}, which is not set (write $$ for a literal $)`);
    if (seen.has(key)) throw new IniError(`${where}: $${ref} refers back to itself`);
    return interpolate(target.value, sections, where, new Set([...seen, key]));
  });
}

/**
 * oslo.config's list syntax: items separated by commas, optionally inside
 * `[...]`, each trimmed; an item in double quotes may contain commas.
 */
export function parseList(value: string): string[] {
  let s = value.trim();
  if (s.startsWith("[") && s.endsWith("]")) s = s.slice(1, -1);
  const items: string[] = [];
  let item = "";
  let quoted = false;
  for (const ch of s) {
    if (ch === '"') quoted = !quoted;
    else if (ch === "," && !quoted) {
      items.push(item.trim());
      item = "";
    } else item += ch;
  }
  items.push(item.trim());
  return items.filter((x) => x.length > 0);
}
