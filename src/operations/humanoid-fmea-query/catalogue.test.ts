import fs from "node:fs";
import { describe, expect, it } from "vitest";
import { AIAG_VDA_SCHEME, actionPriority, aiagVdaActionPriority, PRIORITY_RULE } from "./action-priority.ts";
import {
  CATALOGUE_URL,
  type CatalogueFile,
  CatalogueFileSchema,
  HAZARD_TYPES,
  loadCatalogue,
  MIN_PER_SUBSYSTEM,
  parseCatalogue,
  RISK_GRAPH,
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
  it("holds 96 entries (the spec's count) with distinct ids in catalogue order, at least 6 per subsystem", () => {
    expect(catalogue.version).toBe("2.3.0");
    expect(entries).toHaveLength(96);
    expect(new Set(entries.map((e) => e.id)).size).toBe(96);
    const order = (id: string) => {
      const [, code, n] = id.split("-");
      return SUBSYSTEMS.findIndex((s) => s.code === code) * 100 + Number(n);
    };
    const ids = entries.map((e) => e.id);
    expect([...ids].sort((a, b) => order(a) - order(b))).toEqual(ids);
    for (const s of SUBSYSTEMS) {
      const own = entries.filter((e) => e.subsystem === s.id);
      expect(own.length, s.id).toBeGreaterThanOrEqual(MIN_PER_SUBSYSTEM);
      for (const e of own) expect(e.id).toMatch(new RegExp(`^HFM-${s.code}-(0[1-9]|1[0-2])$`));
    }
  });

  it("keeps version notes, newest first, that explain every change of entries since 2.0.0", () => {
    const [latest, secondReview, previous, ...older] = catalogue.versionNotes;
    expect(latest?.version).toBe(catalogue.version);
    expect([secondReview, previous, ...older].map((n) => n?.version)).toEqual(["2.2.0", "2.1.0", "2.0.0"]);
    const notes = previous?.changes.join(" ") ?? "";
    // 96 kept: the new mode took the place HFM-COM-05 left when it was merged.
    expect(notes).toMatch(/HFM-SW-09/);
    expect(notes).toMatch(/HFM-COM-05 merged into HFM-PER-06/);
    expect(notes).toMatch(/96/);
    for (const id of ["HFM-STR-01", "HFM-BAL-08", "HFM-STR-03", "HFM-SAF-08", "HFM-HRI-06"])
      expect(notes).toContain(id);
    expect(notes).toMatch(/FMEA-MSR/);
    // 2.2.0, the second review: every entry it changed is named in the note.
    const review = secondReview?.changes.join(" ") ?? "";
    for (const id of ["HFM-BAL-08", "HFM-HRI-08", "HFM-HRI-06", "HFM-STR-01", "HFM-NAV-05", "HFM-SAF-08"])
      expect(review).toContain(id);
    for (const id of ["HFM-HRI-01", "HFM-BAL-03", "HFM-ACT-02", "HFM-ACT-06", "HFM-PER-06", "HFM-STR-03"])
      expect(review).toContain(id);
    expect(review).toMatch(/96 entries/);
    // 2.3.0: every entry whose detection changed is named with its old and new rating.
    const rerated = latest?.changes.join(" ") ?? "";
    for (const [id, from, to] of [
      ["HFM-BAL-03", 4, 6],
      ["HFM-PER-02", 4, 6],
      ["HFM-PWR-07", 3, 6],
      ["HFM-HRI-07", 6, 8],
      ["HFM-ENV-01", 3, 4],
    ] as const) {
      expect(rerated).toContain(`${id} ${from} → ${to}`);
      expect(entries.find((e) => e.id === id)?.detection, id).toBe(to);
    }
    expect(rerated).toMatch(/designVerification/);
    expect(rerated).toMatch(/effectAfterResponse/);
    const file = copy();
    file.versionNotes = file.versionNotes.slice(1);
    expect(issues(file)).toContain(`versionNotes: the first note is for version ${catalogue.version}`);
  });

  it("merges the overlapping pairs and retires their ids into the entry that holds them", () => {
    expect(catalogue.retired.map((r) => [r.id, r.mergedInto])).toEqual([
      ["HFM-PER-08", "HFM-PER-01"],
      ["HFM-COM-04", "HFM-SW-05"],
      ["HFM-SW-03", "HFM-NAV-01"],
      ["HFM-PWR-06", "HFM-PWR-01"],
      ["HFM-STR-07", "HFM-BAL-03"],
      ["HFM-STR-05", "HFM-MAN-06"],
      ["HFM-COM-05", "HFM-PER-06"],
    ]);
    for (const { id, mergedInto } of catalogue.retired) {
      expect(entries.some((e) => e.id === id)).toBe(false);
      expect(entries.find((e) => e.id === mergedInto)?.supersedes).toContain(id);
    }
  });

  it("covers the humanoid modes catalogue 1.0 lacked", () => {
    const find = (pattern: RegExp) => entries.filter((e) => pattern.test(e.failureMode)).map((e) => e.id);
    expect(find(/self-collision/i)).toEqual(["HFM-MAN-09"]);
    expect(find(/singularity/i)).toEqual(["HFM-ACT-09"]);
    expect(find(/joint-limit overtravel/i)).toEqual(["HFM-ACT-09"]);
    expect(find(/foot force\/torque|contact detection/i)).toEqual(["HFM-PER-09"]);
    expect(find(/whole-body controller infeasible/i)).toEqual(["HFM-BAL-09"]);
    expect(find(/gantry or hoist/i)).toEqual(["HFM-STR-09"]);
    expect(find(/tactile skin/i)).toEqual(["HFM-PER-10"]);
    // Catalogue 2.1.0: an update that installs or restarts mid-task (HFM-SW-04 is only its regressions).
    expect(find(/update installs|reboots, in the middle of a task/i)).toEqual(["HFM-SW-09"]);
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

  it("stores both priorities, initial and residual: our rule (utility402-strict-1) and the AIAG-VDA 2019 table, with the counts the docs give", () => {
    for (const entry of entries) {
      for (const ratings of [entry, entry.initial]) {
        expect(ratings.actionPriority, entry.id).toBe(actionPriority(ratings));
        expect(ratings.actionPriorityAiagVda2019, entry.id).toBe(aiagVdaActionPriority(ratings));
      }
      expect(entry.initial.severity).toBe(entry.severity);
      expect(entry.initial.occurrence).toBeGreaterThanOrEqual(entry.occurrence);
      expect(entry.initial.detection).toBe(10);
    }
    const count = (key: "actionPriority" | "actionPriorityAiagVda2019", ap: string) =>
      entries.filter((e) => e[key] === ap).length;
    expect(["H", "M", "L"].every((ap) => count("actionPriority", ap) > 0)).toBe(true);
    const doc = fs.readFileSync(new URL("../../../docs/humanoid-fmea.md", import.meta.url), "utf8");
    const line = (key: "actionPriority" | "actionPriorityAiagVda2019") =>
      `${count(key, "H")} H, ${count(key, "M")} M and ${count(key, "L")} L`;
    expect(doc).toContain(`utility402-strict-1 gives ${line("actionPriority")}`);
    expect(doc).toContain(`the AIAG-VDA 2019 table gives ${line("actionPriorityAiagVda2019")}`);
  });

  it("lists further actions for every entry still H (either scheme) with its controls", () => {
    const stillHigh = entries.filter((e) => e.actionPriority === "H" || e.actionPriorityAiagVda2019 === "H");
    expect(stillHigh.length).toBeGreaterThan(0);
    for (const e of stillHigh) expect(e.furtherActions?.length, e.id).toBeGreaterThan(0);
  });

  it("one harm, one severity: every entry's severity is its harm's, whatever the cause or warning", () => {
    // The robot falling onto a person, however caused, is one harm with one severity.
    const fallOntoPerson = entries.filter((e) =>
      /(falls?|falling|tips?|drops?) (from standing height |from height |from a gantry or hoist )?onto (a |the )?(nearby |worker|bystander|person|people)|fall of (a|the) (65 kg )?(balancing )?robot|falling robot/i.test(
        `${e.hazard.description} ${e.effects.join(" ")}`,
      ),
    );
    expect(fallOntoPerson.length).toBeGreaterThanOrEqual(8);
    expect(new Set(fallOntoPerson.map((e) => e.severity))).toEqual(new Set([10]));
    expect(new Set(fallOntoPerson.map((e) => e.hazard.harm))).toEqual(new Set(["robot-falls-onto-person"]));
    const harms = new Map(catalogue.harms.map((h) => [h.id, h.severity]));
    for (const e of entries) expect(e.severity, e.id).toBe(harms.get(e.hazard.harm));
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

  it("cites current editions and labels the rest: IEC TS 62998-1:2019, ISO 13855:2024, ISO/TS 15066 incorporated in ISO 10218-2:2025, ISO 13482 an analogy", () => {
    const cited = entries.flatMap((e) => e.references.map((r) => ({ ...r, id: e.id })));
    expect(cited.filter((r) => /62998/.test(r.standard)).map((r) => r.standard)).toEqual(
      expect.arrayContaining(["IEC TS 62998-1:2019"]),
    );
    for (const r of cited) {
      if (/62998/.test(r.standard)) expect(r.standard).toBe("IEC TS 62998-1:2019");
      if (/13855/.test(r.standard)) expect(r.standard).toBe("ISO 13855:2024");
      if (/13482/.test(r.standard)) expect(r.status, r.id).toBe("analogy");
      if (/15066/.test(r.standard)) {
        expect(r.status, r.id).toBe("incorporated");
        const entry = entries.find((e) => e.id === r.id);
        expect(
          entry?.references.map((x) => x.standard),
          r.id,
        ).toContain("ISO 10218-2:2025");
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

describe("FMEA-MSR: run-time monitors rated on the AIAG-VDA FMEA-MSR factors (S, F, M) with our priority rule, beside the design FMEA", () => {
  // A detection control that acts by itself while the robot works (stops, slows, refuses, switches):
  // a run-time monitor with a system response, which FMEA-MSR rates, not a design-FMEA detection.
  const ACTS =
    /\b(triggers?|stops? (the|and)|that stops|switch(es|ing)? to|refuses?|turns off|slows|unloads|aborts?|blocks?|blocked)\b/i;
  const monitored = entries.filter((e) => e.msr);

  it("gives every entry with a run-time monitor that acts an FMEA-MSR rating (S, F, M and a priority)", () => {
    expect(monitored.length).toBeGreaterThanOrEqual(60);
    const doc = fs.readFileSync(new URL("../../../docs/humanoid-fmea.md", import.meta.url), "utf8");
    expect(doc).toContain(
      `The ${monitored.length} entries whose\ndetection controls include a run-time monitor`,
    );
    const late = monitored.filter((e) => e.msr?.monitoring === 10).length;
    expect(doc).toContain(`${entries.length - monitored.length} entries whose detection is design`);
    expect(doc.replace(/\s+/g, " ")).toContain(`and the ${late} whose response comes after the harm (M 10)`);
    for (const e of entries) {
      if (e.detectionControls.some((c) => ACTS.test(c))) expect(e.msr, e.id).toBeDefined();
    }
    for (const e of monitored) {
      const msr = e.msr as NonNullable<typeof e.msr>;
      expect(e.detectionControls, e.id).toContain(msr.monitor);
      expect(msr.frequency, e.id).toBe(e.occurrence);
      expect(msr.actionPriority, e.id).toBe(
        actionPriority({ severity: e.severity, occurrence: msr.frequency, detection: msr.monitoring }),
      );
      if (msr.actionPriority === "H") expect(e.furtherActions?.length, e.id).toBeGreaterThan(0);
    }
  });

  it("rates a safety-rated monitor better than one that only warns, and never claims monitoring it does not have", () => {
    const m = (id: string) => entries.find((e) => e.id === id)?.msr?.monitoring as number;
    // Two-channel safe torque monitoring (SLT) against an out-of-distribution score that only slows.
    expect(m("HFM-ACT-08")).toBeLessThan(m("HFM-SW-02"));
    expect(m("HFM-SAF-01")).toBeLessThanOrEqual(3);
    expect(m("HFM-SW-02")).toBeGreaterThanOrEqual(7);
    // Logs, statistics and reviews are not run-time monitoring: those entries keep the design FMEA only.
    for (const id of ["HFM-HRI-03", "HFM-HRI-07", "HFM-NAV-05", "HFM-SAF-02", "HFM-STR-08"])
      expect(entries.find((e) => e.id === id)?.msr, id).toBeUndefined();
  });

  it("refuses a monitor that is not one of the entry's detection controls, a frequency other than the occurrence, and a wrong priority", () => {
    const index = raw.entries.findIndex((e: { msr?: unknown }) => e.msr);
    const broken = (change: (msr: Record<string, unknown>) => void) => {
      const file = copy();
      change((file.entries[index] as { msr: Record<string, unknown> }).msr);
      return issues(file).join("\n");
    };
    expect(
      broken((msr) => {
        msr.monitor = "a monitor nobody listed";
      }),
    ).toMatch(/msr\/monitor: .*detection controls/);
    expect(
      broken((msr) => {
        msr.frequency = (msr.frequency as number) === 10 ? 9 : (msr.frequency as number) + 1;
      }),
    ).toMatch(/msr\/frequency/);
    expect(
      broken((msr) => {
        msr.actionPriority = msr.actionPriority === "L" ? "H" : "L";
      }),
    ).toMatch(/msr\/actionPriority/);
  });

  it("names the rule of every priority in the file: FMEA-MSR's is ours, never the handbook's", () => {
    expect(catalogue.priorityRules).toEqual({
      actionPriority: PRIORITY_RULE,
      actionPriorityAiagVda2019: AIAG_VDA_SCHEME,
      msrActionPriority: PRIORITY_RULE,
    });
    const file = copy();
    (file.priorityRules as Record<string, string>).msrActionPriority = "AIAG-VDA FMEA-MSR";
    expect(issues(file).join("\n")).toMatch(/priorityRules\/msrActionPriority/);
    const unnamed = copy() as Partial<CatalogueFile>;
    delete unnamed.priorityRules;
    expect(issues(unnamed).join("\n")).toMatch(/priorityRules/);
  });
});

/** Every string of an entry (its text fields, lists and nested objects). */
const texts = (entry: object) => strings(entry).map(([, text]) => text);

describe("the catalogue agrees with the standards it cites", () => {
  const entry = (id: string) => entries.find((e) => e.id === id) as (typeof entries)[number];

  it("never offers stop category 2 for an emergency stop (ISO 13850, IEC 60204-1: category 0 or 1)", () => {
    for (const e of entries) {
      for (const text of texts(e)) {
        if (!/category 2|categor(y|ies) [01] or 2/i.test(text)) continue;
        expect(text, e.id).toMatch(/protective stop|never category 2|no category 2/i);
        expect(text, e.id).not.toMatch(/all stops/i);
      }
    }
    for (const id of ["HFM-SAF-02", "HFM-BAL-07"])
      expect(entry(id).references.map((r) => r.standard)).toContain("ISO 13850:2015");
    const estops = catalogue.safetyFunctions.filter((sf) => /emergency stop/i.test(sf.name));
    expect(estops.length).toBeGreaterThanOrEqual(2);
    for (const sf of estops) expect([0, 1]).toContain(sf.stopCategory);
  });

  it("holds long-contact surfaces to 43 °C, 48 °C only for contact limited to 10 min (ISO 13732-1)", () => {
    const criterion = entry("HFM-ACT-07").verificationTest.acceptanceCriteria;
    expect(criterion).toMatch(/hand-guide or lean on ≤ 43 °C/);
    expect(criterion).toMatch(/≤ 48 °C only where contact is limited to 10 min/);
    expect(criterion).not.toMatch(/even with long contact/);
  });

  it("prevents a fall onto a person instead of limiting it: no strike is a pass, people are kept out of the fall zone", () => {
    const e = entry("HFM-STR-01");
    const criterion = e.verificationTest.acceptanceCriteria;
    expect(criterion).not.toMatch(/150 J|5 kN|3 of 30|transient value|accepts contact|280 N/);
    expect(criterion).toMatch(
      /0 of 30 collapses from the stance land more than 0\.6 m from the feet, strike or touch/,
    );
    // Sized to what it can show (review 2.1.0): a mechanism check, not a probability claim.
    expect(criterion).toMatch(/verify the mechanism, not a probability/);
    expect(e.function).toMatch(/prevented, never limited/);
    expect(e.preventionControls.join(" ")).toMatch(/fall zone .* supported stance/);
    expect(e.safetyFunctions).toContain("SF-SSM");
    expect(e.references.map((r) => r.standard)).not.toContain("ISO/TS 15066:2016");
  });

  it("holds a stepped-on foot to a stated value with its real basis: ISO/TS 15066 has no foot, the lower leg is 130 N", () => {
    const e = entry("HFM-BAL-08");
    const criterion = e.verificationTest.acceptanceCriteria;
    expect(criterion).not.toMatch(/200 N/);
    expect(criterion).toMatch(/unloaded below 130 N, the lower leg quasi-static value/);
    expect(criterion).toMatch(/body model lacks, as a declared value by analogy/);
    // No transient allowance for a pinned foot, and no peak limit pretended (review 2.1.0).
    expect(criterion).toMatch(/No peak-force limit is claimed/);
    expect(criterion).not.toMatch(/conservative/);
    expect(e.references.find((r) => r.standard === "ISO/TS 15066:2016")?.topic).toMatch(/No foot region/);
  });

  it("holds a trapped finger to the hands and fingers value (140 N), not the face value (65 N)", () => {
    const criterion = entry("HFM-STR-03").verificationTest.acceptanceCriteria;
    expect(criterion).not.toMatch(/65 N/);
    expect(criterion).toMatch(/≤ 140 N \(the ISO\/TS 15066 hands and fingers value\)/);
  });

  it("keeps the time-source security of the merged HFM-COM-05 in HFM-PER-06, with a monitor that can see a whole-clock jump", () => {
    const e = entry("HFM-PER-06");
    const text = JSON.stringify(e);
    expect(e.verificationTest.method).toMatch(/10 s, 1 h and 1 year/);
    expect(e.verificationTest.acceptanceCriteria).toMatch(/drift ≤ 2 s after 72 h/);
    expect(e.msr?.monitor).toMatch(/clock offset monitor against peer/);
    expect(e.effects.join(" ")).toMatch(/Certificate validity checks fail or pass wrongly/);
    expect(e.references.map((r) => r.standard)).toContain("IEC 62443-4-2");
    expect(text).toMatch(/Unauthenticated network time protocol/);
  });

  it("leaves unrequested reboots to HFM-SW-01: HFM-SW-09's monitor refuses requested installs and restarts", () => {
    expect(entry("HFM-SW-09").failureMode).toMatch(
      /requested restart .* unrequested crash or reboot is HFM-SW-01/,
    );
  });

  it("allows no automatic restart after any stop (HFM-SAF-08)", () => {
    const e = entry("HFM-SAF-08");
    expect(e.preventionControls.join(" ")).not.toMatch(/Automatic resume only/);
    expect(e.verificationTest.acceptanceCriteria).toMatch(/0 automatic resumes/);
  });

  it("rates an entry by the worst harm it names: a teleoperated robot that can fall, a robot standing on a foot (review 2.1.0)", () => {
    for (const id of ["HFM-HRI-06", "HFM-BAL-08", "HFM-HRI-08"])
      expect(entry(id), id).toMatchObject({ severity: 10, hazard: { harm: "robot-falls-onto-person" } });
    expect(loadCatalogue().harms.map((h) => h.id)).not.toContain("foot-crushing");
  });

  it("derives the shared-aisle speed from its own energy method (65 kg robot, chest values)", () => {
    // v = F / √(μ k), μ = (1/m_chest + 1/m_robot)⁻¹, transient chest force 280 N, k = 25 N/mm.
    const mu = 1 / (1 / 40 + 1 / 65);
    const vMax = 280 / Math.sqrt(mu * 25_000);
    expect(vMax).toBeCloseTo(0.356, 3);
    expect(0.5 * 40 * 0 + (280 * 280) / (2 * 25_000)).toBeCloseTo(1.568, 3); // energy ≈ 1.6 J
    const criterion = entry("HFM-HRI-01").verificationTest.acceptanceCriteria;
    const declared = Number(/shared-aisle speed of ([\d.]+) m\/s/.exec(criterion)?.[1]);
    expect(declared).toBeLessThanOrEqual(vMax);
    expect(entry("HFM-HRI-01").preventionControls.join(" ")).not.toMatch(/0\.5 m\/s/);
  });

  it("expects every test piece detected in a protective field (IEC 61496), not 99.9 %", () => {
    const criterion = entry("HFM-PER-01").verificationTest.acceptanceCriteria;
    expect(criterion).not.toMatch(/99\.9/);
    expect(criterion).toMatch(/3,240 of 3,240 trials \(0 missed\)/);
  });

  it("sets warning signals more than 15 dB(A) above ambient (ISO 7731)", () => {
    const e = entry("HFM-ENV-01");
    expect(e.verificationTest.acceptanceCriteria).toMatch(/more than 15 dB\(A\) above the measured ambient/);
    expect(JSON.stringify(e)).not.toMatch(/10 dB above/);
    expect(e.references.map((r) => r.standard)).toContain("ISO 7731:2003");
  });

  it("does not call 60 V DC touch-safe where floors are hosed down, and tests the get-up zone it declares", () => {
    expect(JSON.stringify(entry("HFM-PWR-03"))).not.toMatch(/60 V/);
    expect(entry("HFM-PWR-03").verificationTest.acceptanceCriteria).toMatch(/dry and wet trials/);
    const getUp = entry("HFM-STR-06");
    expect(getUp.preventionControls.join(" ")).toMatch(/2\.0 m get-up zone/);
    expect(getUp.verificationTest.method).toMatch(/from 0\.3 to 2\.0 m/);
    expect(getUp.verificationTest.acceptanceCriteria).toMatch(/within 2\.0 m/);
  });

  it("gives each safety function its stop category and the PL the ISO 13849-1 risk graph requires (or its SIL)", () => {
    expect(RISK_GRAPH).toEqual({
      S1F1P1: "a",
      S1F1P2: "b",
      S1F2P1: "b",
      S1F2P2: "c",
      S2F1P1: "c",
      S2F1P2: "d",
      S2F2P1: "d",
      S2F2P2: "e",
    });
    for (const sf of catalogue.safetyFunctions) {
      const { severity, frequency, avoidance } = sf.riskGraph;
      expect(sf.requiredPL, sf.id).toBe(RISK_GRAPH[`${severity}${frequency}${avoidance}`]);
      expect(sf.silEquivalent, sf.id).toBe({ a: null, b: 1, c: 1, d: 2, e: 3 }[sf.requiredPL]);
    }
    const used = new Set(entries.flatMap((e) => e.safetyFunctions ?? []));
    expect(used).toEqual(new Set(catalogue.safetyFunctions.map((sf) => sf.id)));
    expect(entries.find((e) => e.id === "HFM-BAL-07")?.safetyFunctions).toContain("SF-CONTROLLED-COLLAPSE");
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
    expect(issues(missing)).toContain("entries: the catalogue holds 95 failure modes, not 96");

    const severity = copy();
    (severity.entries[0] as any).severity = 8;
    expect(issues(severity).join("\n")).toMatch(/entries\/0\/severity: one harm, one severity/);

    const noActions = copy();
    const high = noActions.entries.findIndex((e) => e.actionPriority === "H");
    delete (noActions.entries[high] as any).furtherActions;
    expect(issues(noActions)).toContain(
      `entries/${high}/furtherActions: a residual H (any of its priorities, FMEA-MSR included) needs further actions`,
    );

    const estop = copy();
    (estop.safetyFunctions.find((sf) => sf.id === "SF-ESTOP") as any).stopCategory = 2;
    expect(issues(estop).join("\n")).toMatch(/stopCategory: an emergency stop is stop category 0 or 1/);

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
    (file.entries[0] as any).id = "HFM-BAL-13";
    (file.entries[2] as any).hazard.type = "laser";
    (file.entries[4] as any).subsystem = "legs";
    const found = issues(file);
    expect(found).toContain(
      "entries/0/id: Invalid string: must match pattern /^HFM-[A-Z]{2,3}-(0[1-9]|1[0-2])$/",
    );
    expect(found.some((i) => i.startsWith("entries/2/hazard/type:"))).toBe(true);
    expect(found.some((i) => i.startsWith("entries/4/subsystem:"))).toBe(true);
    expect(() => parseCatalogue(file)).toThrow(/data\/humanoid-fmea.json is invalid/);
  });
});
