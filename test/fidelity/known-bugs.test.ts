/** docs/placement-bugs.md and the differential test's exception list name the same entries. */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { KNOWN_BUGS } from "../compat/exceptions.js";

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
const anchor = (heading: string) =>
  heading
    .toLowerCase()
    .replace(/[^a-z0-9 -]/g, "")
    .replace(/ /g, "-");

describe("docs/placement-bugs.md", () => {
  it("lists exactly the exceptions npm run compat accepts", () => {
    const doc = readFileSync(new URL("../../docs/placement-bugs.md", import.meta.url), "utf8");
    const headings = [...doc.matchAll(/^## (.+)$/gm)].map((m) => anchor(m[1]));
    expect(headings.sort()).toEqual(KNOWN_BUGS.map((b) => b.anchor).sort());
  });
});
