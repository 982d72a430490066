import fs from "node:fs";
import { describe, expect, it } from "vitest";
import { actionPriority } from "./action-priority.ts";
import {
  CATALOGUE_URL,
  type CatalogueFile,
  CatalogueFileSchema,
  FAILURES_PER_SUBSYSTEM,
  HAZARD_TYPES,
  loadCatalogue,
  parseCatalogue,
  SUBSYSTEMS,
} from "./catalogue.ts";
import { tokenize } from "./search.ts";

const raw = JSON.parse(fs.readFileSync(CATALOGUE_URL, "utf8"));
const catalogue = loadCatalogue();
const entries = catalogue.entries;
const copy = (): CatalogueFile => structuredClone(raw);
const issues = (file: unknown) => {
  const parsed = CatalogueFileSchema.safeParse(file);
  return parsed.success ? [] : parsed.error.issues.map((i) => `${i.path.join("/")}: ${i.message}`);
};

/** Every string reachable in a value, with its path. */
function strings(value: unknown, path = ""): [string, string][] {
  if (typeof value === "string") return [[path, value]];
  if (Array.isArray(value)) return value.flatMap((v, i) => strings(v, `${path}/${i}`));
  if (value && typeof value === "object")
    return Object.entries(value).flatMap(([k, v]) => strings(v, `${path}/${k}`));
  return [];
}

describe("the shipped catalogue (data/humanoid-fmea.json)", () => {
  it("holds 96 entries with 96 distinct ids, 8 per subsystem, numbered 01–08 in catalogue order", () => {
    expect(entries).toHaveLength(96);
    expect(new Set(entries.map((e) => e.id)).size).toBe(96);
    const expectedIds = SUBSYSTEMS.flatMap((s) =>
      Array.from({ length: FAILURES_PER_SUBSYSTEM }, (_, i) => `HFM-${s.code}-0${i + 1}`),
    );
    expect(entries.map((e) => e.id)).toEqual(expectedIds);
    for (const s of SUBSYSTEMS) expect(entries.filter((e) => e.subsystem === s.id)).toHaveLength(8);
  });

  it("has every field present and non-empty, ratings 1–10 and an ISO 12100 hazard type", () => {
    for (const entry of entries) {
      for (const key of [
        "function",
        "failureMode",
        "effects",
        "hazard",
        "causes",
        "preventionControls",
        "detectionControls",
        "verificationTest",
        "references",
      ] as const) {
        expect(entry[key], `${entry.id} ${key}`).toBeDefined();
      }
      for (const list of [
        entry.effects,
        entry.causes,
        entry.preventionControls,
        entry.detectionControls,
        entry.references,
      ])
        expect(list.length, entry.id).toBeGreaterThan(0);
      for (const [path, text] of strings(entry))
        expect(text.trim().length, `${entry.id}${path}`).toBeGreaterThan(0);
      for (const rating of [entry.severity, entry.occurrence, entry.detection]) {
        expect(Number.isInteger(rating) && rating >= 1 && rating <= 10).toBe(true);
      }
      expect(HAZARD_TYPES).toContain(entry.hazard.type);
    }
  });

  it("stores the action priority our rule computes from S, O and D, uses all three levels, as the docs say", () => {
    for (const entry of entries) expect(entry.actionPriority, entry.id).toBe(actionPriority(entry));
    const count = (ap: string) => entries.filter((e) => e.actionPriority === ap).length;
    expect([count("H"), count("M"), count("L")].every((n) => n > 0)).toBe(true);
    const doc = fs.readFileSync(new URL("../../../docs/humanoid-fmea.md", import.meta.url), "utf8");
    expect(doc).toContain(`has ${count("H")} H, ${count("M")} M and ${count("L")} L entries`);
  });

  it("has distinct entries: no repeated text and no near-duplicate failure descriptions", () => {
    for (const field of ["function", "failureMode"] as const) {
      expect(new Set(entries.map((e) => e[field].toLowerCase())).size, field).toBe(96);
    }
    expect(new Set(entries.map((e) => e.verificationTest.method)).size).toBe(96);
    expect(new Set(entries.map((e) => e.verificationTest.acceptanceCriteria)).size).toBe(96);
    expect(new Set(entries.map((e) => e.hazard.description)).size).toBe(96);
    // Word overlap (Jaccard) of what fails and why, between any two entries.
    const words = entries.map((e) => new Set(tokenize(`${e.failureMode} ${e.causes.join(" ")}`)));
    let worst = 0;
    for (let i = 0; i < words.length; i++) {
      for (let j = i + 1; j < words.length; j++) {
        const a = words[i] as Set<string>;
        const b = words[j] as Set<string>;
        const shared = [...a].filter((w) => b.has(w)).length;
        worst = Math.max(worst, shared / (a.size + b.size - shared));
      }
    }
    expect(worst).toBeLessThan(0.35);
  });

  it("gives every verification test a measurable pass criterion (numbers with units or pass counts)", () => {
    for (const entry of entries) {
      expect(entry.verificationTest.acceptanceCriteria, entry.id).toMatch(/\d/);
    }
    const file = copy();
    (file.entries[0] as any).verificationTest.acceptanceCriteria = "robot behaves safely in all tests";
    expect(issues(file)).toEqual([
      "entries/0/verificationTest/acceptanceCriteria: a measurable pass criterion: a number with its unit",
    ]);
  });

  it("cites standards by number and topic only, marks drafts, and quotes no standard text", () => {
    for (const entry of entries) {
      for (const ref of entry.references) {
        expect(ref.standard).toMatch(/\d/);
        expect(ref.topic.length, `${entry.id} ${ref.standard}`).toBeLessThanOrEqual(120);
        expect(ref.topic).not.toMatch(/["“”]|shall/);
        if (ref.standard === "ISO 25785-1") expect(ref.status, entry.id).toBe("draft");
      }
    }
  });

  it("covers the humanoid specifics: stop categories, falls, power loss, backdrivability, battery, contact limits, perception, teleoperation, updates", () => {
    const cites = (standard: string) =>
      entries.filter((e) => e.references.some((r) => r.standard.startsWith(standard)));
    expect(cites("IEC 60204-1").map((e) => e.id)).toContain("HFM-SAF-02");
    expect(cites("ISO 25785-1").length).toBeGreaterThanOrEqual(12);
    expect(cites("ISO/TS 15066").length).toBeGreaterThanOrEqual(6);
    const mention = (pattern: RegExp) =>
      entries.filter((e) => pattern.test(JSON.stringify(e))).map((e) => e.id);
    expect(mention(/fall zone/i).length).toBeGreaterThanOrEqual(6);
    expect(mention(/back-driv/i).length).toBeGreaterThanOrEqual(3);
    expect(mention(/stop category|category [012] /i).length).toBeGreaterThanOrEqual(2);
    expect(mention(/teleoperat/i).length).toBeGreaterThanOrEqual(4);
    expect(mention(/thermal runaway/i)).toContain("HFM-PWR-01");
    expect(mention(/update/i)).toEqual(expect.arrayContaining(["HFM-SW-04", "HFM-COM-03"]));
    expect(entries.filter((e) => e.subsystem === "perception").every((e) => e.severity >= 7)).toBe(true);
  });
});

describe("the catalogue schema refuses a broken file", () => {
  it("accepts the shipped file as is", () => {
    expect(issues(raw)).toEqual([]);
    expect(() => parseCatalogue(raw)).not.toThrow();
  });

  it("refuses a duplicate id, a missing entry, a wrong action priority and an empty list", () => {
    const duplicate = copy();
    (duplicate.entries[1] as any).id = "HFM-ACT-01";
    expect(issues(duplicate)).toContain("entries/1/id: duplicate id HFM-ACT-01");

    const missing = copy();
    missing.entries.splice(10, 1);
    expect(issues(missing)).toContain("entries: balance-locomotion has 7 failure modes, not 8");

    const wrongPriority = copy();
    const first = wrongPriority.entries[0] as any;
    first.actionPriority = first.actionPriority === "L" ? "H" : "L";
    expect(issues(wrongPriority).join("\n")).toMatch(/^entries\/0\/actionPriority: our rule gives/);

    const empty = copy();
    (empty.entries[3] as any).causes = [];
    expect(issues(empty)).toEqual([expect.stringMatching(/^entries\/3\/causes: /)]);

    const blank = copy();
    (blank.entries[5] as any).effects = ["  "];
    expect(issues(blank)).toEqual([expect.stringMatching(/^entries\/5\/effects\/0: /)]);
  });

  it("refuses an id that does not belong to its subsystem and an unknown hazard type", () => {
    const file = copy();
    (file.entries[0] as any).id = "HFM-BAL-09";
    (file.entries[2] as any).hazard.type = "laser";
    (file.entries[4] as any).subsystem = "legs";
    const found = issues(file);
    expect(found).toContain("entries/0/id: Invalid string: must match pattern /^HFM-[A-Z]{2,3}-0[1-8]$/");
    expect(found.some((i) => i.startsWith("entries/2/hazard/type:"))).toBe(true);
    expect(found.some((i) => i.startsWith("entries/4/subsystem:"))).toBe(true);
    expect(() => parseCatalogue(file)).toThrow(/data\/humanoid-fmea.json is invalid/);
  });
});
