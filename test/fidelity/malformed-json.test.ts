/**
 * Malformed request bodies, sent byte for byte to the real Placement and to
 * this server: the same status and the same detail ("Malformed JSON: " and
 * Python's message with its position) on every route that reads a body.
 * Bodies that are JSON only for Python (NaN, Infinity) get the same schema
 * error. Bodies Placement answers with a 500 (nesting past its recursion
 * limit, a NaN allocation ratio) get a 400 here, as docs/placement-bugs.md
 * says.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { startLiveServer, type LiveServer } from "../support/live-server.js";
import { referenceUnavailable, startReferencePlacement, type ReferencePlacement } from "../support/reference-placement.js";

const missing = referenceUnavailable();

const RP = "6f1a0c2e-6d4b-4c8e-9a51-3b7d2e9c0a01";
const CONSUMER = "6f1a0c2e-6d4b-4c8e-9a51-3b7d2e9c0c01";

const text = (s: string) => new TextEncoder().encode(s);
const bytes = (...b: number[]) => new Uint8Array(b);

/** Bodies Python's json refuses: every kind of message, positions after line breaks and non-ASCII text. */
const MALFORMED: [string, Uint8Array][] = [
  ["empty", text("")],
  ["spaces only", text("   ")],
  ["line breaks only", text("\n\r\n\t")],
  ["a word", text("not json")],
  ["a lone brace", text("{")],
  ["a lone bracket", text("[")],
  ["single quotes", text("{'name': 'CUSTOM_A'}")],
  ["an unquoted key", text("{name: 1}")],
  ["a trailing comma in an object", text('{"name": "CUSTOM_A",}')],
  ["a trailing comma in an array", text('{"traits": ["A",]}')],
  ["a missing colon", text('{"name" "CUSTOM_A"}')],
  ["a missing comma in an object", text('{"name": "CUSTOM_A" "uuid": 1}')],
  ["a missing comma in an array", text('{"traits": ["A" "B"]}')],
  ["an unclosed object", text('{"name": "CUSTOM_A"')],
  ["an unclosed array", text('{"traits": ["A"')],
  ["a missing value", text('{"name": }')],
  ["an unterminated string", text('{"name": "CUSTOM_A}')],
  ["a backslash at the end", text('{"name": "CUSTOM_A\\')],
  ["a tab in a string", text('{"name": "CUSTOM\tA"}')],
  ["a line break in a string", text('{"name": "CUSTOM\nA"}')],
  ["an unknown escape", text('{"name": "CUSTOM_\\A"}')],
  ["a short \\u escape", text('{"name": "\\u12"}')],
  ["a bad \\u escape after a high surrogate", text('{"name": "\\ud83d\\uzzzz"}')],
  ["a \\u escape at the end", text('"\\u1234')],
  ["extra data", text('{"name": "CUSTOM_A"} {}')],
  ["extra data after a number", text("1.")],
  ["a leading zero", text('{"total": 01}')],
  ["a bare minus", text('{"total": -}')],
  ["a truncated literal", text('{"name": nul}')],
  ["-Inf", text('{"total": -Inf}')],
  ["a pretty-printed body with an error on line 4", text('{\n  "resource_provider_generation": 0,\n  "inventories": {\n    "VCPU": {"total": 8,}\n  }\n}')],
  ["CRLF line breaks", text('{\r\n  "name": "CUSTOM_A"\r\n  "uuid": null\r\n}')],
  ["non-ASCII before the error", text('{"name": "CUSTOM_é", "description": "ünïcødé", x}')],
  ["astral characters before the error", text('{"name": "😀😀😀", "x": ]')],
  ["a multi-line body with non-ASCII lines", text('{\n "a": "名前",\n "b": "😀",\n "c": tru\n}')],
  ["a UTF-8 BOM", text("\ufeff{}")],
  ["an integer of 4301 digits", text(`{"total": ${"1".repeat(4301)}}`)],
  ["an invalid start byte", bytes(0x7b, 0xff, 0x7d)],
  ["a truncated sequence at the end", new Uint8Array([...text('{"name": "'), 0xe2, 0x82])],
  ["a bad continuation byte", new Uint8Array([...text('{"name": "'), 0xc3, 0x28, ...text('"}')])],
  ["an encoded surrogate", new Uint8Array([...text('"'), 0xed, 0xa0, 0x80, ...text('"')])],
  ["an overlong encoding", bytes(0xc0, 0xaf)],
  ["Latin-1 text", new Uint8Array([...text('{"name": "caf'), 0xe9, ...text('"}')])],
  ["as deep as Python reads, then cut off", text("[".repeat(954))],
];

const inventory = (record: string) => `{"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 8, ${record}}}}`;
const allocation = (resources: string, generation = "null") =>
  `{"allocations": {"${RP}": {"resources": {${resources}}}}, "project_id": "p", "user_id": "u", "consumer_generation": ${generation}, "consumer_type": "INSTANCE"}`;

/**
 * Bodies Python's json reads and its schemas refuse: NaN and the infinities,
 * numbers whose kind shows in the message (0.0, 1e2 is 100.0, a 30-digit
 * integer), strings repr() escapes. Placement's message up to its schema dump.
 */
const READ_THEN_REFUSED: [string, string, string][] = [
  ["POST", "/resource_classes", "NaN"],
  ["POST", "/resource_classes", "-Infinity"],
  ["POST", "/resource_classes", '{"name": NaN}'],
  ["POST", "/resource_classes", '{"name": Infinity}'],
  ["POST", "/resource_classes", '{"name": 1e400}'],
  ["POST", "/resource_classes", '{"name": 0.0}'],
  ["POST", "/resource_classes", '{"name": -0.0}'],
  ["POST", "/resource_classes", '{"name": 1e2}'],
  ["POST", "/resource_classes", '{"name": 123456789012345678901234567890}'],
  ["POST", "/resource_classes", '{"name": [1.0, -0, 2.50, 1E-7, 2.5e20]}'],
  ["POST", "/resource_classes", '{"name": "CUSTOM_A", "name": 1.0}'],
  ["POST", "/resource_classes", '{"name": "CUSTOM_\\ud800"}'],
  ["POST", "/resource_classes", '{"name": "CUSTOM_\\u00a0\\u200b\\u0001\\u2028"}'],
  ["POST", "/resource_classes", '{"name": "CUSTOM_é😀"}'],
  ["POST", "/resource_classes", '{"name": "it\'s"}'],
  ["POST", "/resource_providers", '{"name": 1e2}'],
  ["PUT", `/resource_providers/${RP}/inventories`, inventory('"reserved": NaN')],
  ["PUT", `/resource_providers/${RP}/inventories`, inventory('"max_unit": Infinity')],
  ["PUT", `/resource_providers/${RP}/inventories`, inventory('"min_unit": -1e400')],
  ["PUT", `/resource_providers/${RP}/inventories`, inventory('"step_size": 0.0')],
  ["PUT", `/resource_providers/${RP}/inventories`, inventory('"reserved": 123456789012345678901234567890')],
  ["PUT", `/resource_providers/${RP}/inventories`, inventory('"allocation_ratio": Infinity')],
  ["PUT", `/resource_providers/${RP}/inventories`, inventory('"allocation_ratio": 1e400')],
  ["PUT", `/resource_providers/${RP}/inventories/VCPU`, '{"resource_provider_generation": NaN, "total": 8}'],
  ["POST", `/resource_providers/${RP}/inventories`, '{"resource_class": "VCPU", "total": -Infinity}'],
  ["PUT", `/resource_providers/${RP}/traits`, '{"resource_provider_generation": Infinity, "traits": []}'],
  ["PUT", `/resource_providers/${RP}/aggregates`, '{"resource_provider_generation": NaN, "aggregates": []}'],
  ["PUT", `/allocations/${CONSUMER}`, allocation('"VCPU": NaN')],
  ["PUT", `/allocations/${CONSUMER}`, allocation('"VCPU": 0.0')],
  ["PUT", `/allocations/${CONSUMER}`, allocation('"VCPU": 1', "Infinity")],
  ["PUT", `/allocations/${CONSUMER}`, allocation('"VCPU": 1', "1.5")],
  ["PUT", `/allocations/${CONSUMER}`, allocation('"VCPU": 1').replace(', "consumer_generation": null', "")],
  ["POST", "/allocations", `{"${CONSUMER}": ${allocation('"VCPU": -Infinity')}}`],
  ["POST", "/reshaper", `{"inventories": {"${RP}": {"resource_provider_generation": NaN, "inventories": {}}}, "allocations": {}}`],
  ["POST", "/reshaper", `{"inventories": {"${RP}": {"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 0.0}}}}, "allocations": {}}`],
];

interface Sent {
  method: string;
  path: string;
  version: string;
}

/** Every route that reads a JSON body (at a microversion where it does). */
const ROUTES: Sent[] = [
  { method: "POST", path: "/resource_classes", version: "1.39" },
  { method: "PUT", path: "/resource_classes/CUSTOM_MALFORMED", version: "1.2" },
  { method: "POST", path: "/resource_providers", version: "1.39" },
  { method: "PUT", path: `/resource_providers/${RP}`, version: "1.39" },
  { method: "PUT", path: `/resource_providers/${RP}/inventories`, version: "1.39" },
  { method: "POST", path: `/resource_providers/${RP}/inventories`, version: "1.39" },
  { method: "PUT", path: `/resource_providers/${RP}/inventories/VCPU`, version: "1.39" },
  { method: "PUT", path: `/resource_providers/${RP}/traits`, version: "1.39" },
  { method: "PUT", path: `/resource_providers/${RP}/aggregates`, version: "1.39" },
  { method: "POST", path: "/allocations", version: "1.39" },
  { method: "PUT", path: `/allocations/${CONSUMER}`, version: "1.39" },
  { method: "POST", path: "/reshaper", version: "1.39" },
];

interface Answer {
  status: number;
  detail: string;
}

/** uwsgi's http-socket closes every connection after one answer: never reuse one. */
const HEADERS = { "x-auth-token": "admin", connection: "close" };

async function send(baseUrl: string, sent: Sent, body: Uint8Array): Promise<Answer> {
  const res = await fetch(baseUrl + sent.path, {
    method: sent.method,
    headers: { ...HEADERS, "openstack-api-version": `placement ${sent.version}`, "content-type": "application/json" },
    body: Buffer.from(body),
  });
  const text = await res.text();
  let detail: string;
  try {
    detail = JSON.parse(text).errors[0].detail;
  } catch {
    detail = text;
  }
  return { status: res.status, detail };
}

describe.skipIf(!!missing)(`malformed bodies answer as Placement's${missing ? ` (skipped: ${missing})` : ""}`, () => {
  let referenceDb: TestDatabase;
  let oursDb: TestDatabase;
  let reference: ReferencePlacement;
  let ours: LiveServer;
  const both = async (sent: Sent, body: Uint8Array) => ({ reference: await send(reference.baseUrl, sent, body), ours: await send(ours.baseUrl, sent, body) });
  const generation = async (baseUrl: string) => {
    const res = await fetch(`${baseUrl}/resource_providers/${RP}`, { headers: HEADERS });
    return ((await res.json()) as { generation: number }).generation;
  };

  beforeAll(async () => {
    [referenceDb, oursDb] = await Promise.all([createTestDatabase({ migrated: false }), createTestDatabase()]);
    [reference, ours] = await Promise.all([startReferencePlacement({ databaseUrl: referenceDb.url }), startLiveServer(oursDb.url, { LOG_LEVEL: "warn" })]);
    // The provider routes find their provider, so the body is what they judge.
    const create = { method: "POST", path: "/resource_providers", version: "1.20" };
    const made = await both(create, text(JSON.stringify({ name: "malformed", uuid: RP })));
    expect([made.reference.status, made.ours.status]).toEqual([200, 200]);
  }, 240_000);
  afterAll(async () => {
    await Promise.all([reference?.stop(), ours?.stop()]);
    await Promise.all([referenceDb?.drop(), oursDb?.drop()]);
  });

  it("has a corpus that covers every kind of message", () => {
    expect(new Set(MALFORMED.map(([name]) => name)).size).toBe(MALFORMED.length);
    expect(MALFORMED.length).toBeGreaterThanOrEqual(40);
  });

  it("answers every malformed body with Placement's status and detail", { timeout: 120_000 }, async () => {
    const differing: unknown[] = [];
    for (const [name, body] of MALFORMED) {
      const answers = await both(ROUTES[0], body);
      expect(answers.reference.detail, name).toMatch(/Malformed JSON: /);
      if (JSON.stringify(answers.reference) !== JSON.stringify(answers.ours)) differing.push({ name, ...answers });
    }
    expect(differing).toEqual([]);
  });

  it("answers the same on every route that reads a body, and writes nothing", { timeout: 120_000 }, async () => {
    const sample = MALFORMED.filter(([name]) => /^(empty|a missing comma in an object|non-ASCII before the error|a UTF-8 BOM|a bad continuation byte|a multi-line)/.test(name));
    const before = [await generation(reference.baseUrl), await generation(ours.baseUrl)];
    const differing: unknown[] = [];
    for (const route of ROUTES) {
      for (const [name, body] of sample) {
        const answers = await both(route, body);
        expect(answers.reference.status, `${route.method} ${route.path} ${name}`).toBe(400);
        if (JSON.stringify(answers.reference) !== JSON.stringify(answers.ours)) differing.push({ route, name, ...answers });
      }
    }
    expect(differing).toEqual([]);
    expect([await generation(reference.baseUrl), await generation(ours.baseUrl)]).toEqual(before);
  });

  it("answers bodies Python reads but the schema refuses with Placement's message, numbers in their written kind", { timeout: 120_000 }, async () => {
    const firstPart = (a: Answer) => ({ status: a.status, detail: a.detail.replace(/ {2}Failed validating .*$/s, "") });
    const differing: unknown[] = [];
    for (const [method, path, body] of READ_THEN_REFUSED) {
      const answers = await both({ method, path, version: "1.39" }, text(body));
      expect(answers.reference.detail, body).toMatch(/JSON does not validate: /);
      if (JSON.stringify(firstPart(answers.reference)) !== JSON.stringify(firstPart(answers.ours))) differing.push({ body, ...answers });
    }
    expect(differing).toEqual([]);
  });

  it("refuses an allocation_ratio of NaN or -Infinity with a 400 where Placement answers 500", { timeout: 60_000 }, async () => {
    for (const ratio of ["NaN", "-Infinity", "-1e400"]) {
      const answers = await both({ method: "PUT", path: `/resource_providers/${RP}/inventories`, version: "1.39" }, text(inventory(`"allocation_ratio": ${ratio}`)));
      expect(answers.reference.status).toBe(500);
      expect(answers.reference.detail).toMatch(/cannot convert float (NaN|infinity) to integer/);
      expect(answers.ours.status).toBe(400);
      expect(answers.ours.detail).toMatch(/JSON does not validate: (nan|-inf) is not a finite number/);
    }
  });

  it("refuses nesting past Placement's recursion limit with a 400 where Placement answers 500", { timeout: 60_000 }, async () => {
    for (const body of [text("[".repeat(955)), text(`{"name": ${'{"a": '.repeat(2000)}`), text(`${"[".repeat(100_000)}${"]".repeat(100_000)}`)]) {
      const answers = await both(ROUTES[0], body);
      expect(answers.reference.status).toBe(500);
      expect(answers.reference.detail).toContain("maximum recursion depth exceeded");
      expect(answers.ours.status).toBe(400);
      expect(answers.ours.detail).toMatch(/Malformed JSON: Nesting deeper than 954 arrays and objects: line 1 column \d+ \(char \d+\)/);
    }
  });
});
