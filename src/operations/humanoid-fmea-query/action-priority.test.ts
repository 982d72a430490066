import fs from "node:fs";
import { describe, expect, it } from "vitest";
import {
  type ActionPriority,
  AIAG_VDA_2019_AP_TABLE,
  actionPriority,
  aiagVdaActionPriority,
} from "./action-priority.ts";

const RANK: Record<ActionPriority, number> = { L: 0, M: 1, H: 2 };
const ratings = Array.from({ length: 10 }, (_, i) => i + 1);
const all = ratings.flatMap((severity) =>
  ratings.flatMap((occurrence) => ratings.map((detection) => ({ severity, occurrence, detection }))),
);

describe("our action-priority rule", () => {
  it("never lowers the priority when any rating gets worse (all 1,000 combinations)", () => {
    for (const r of all) {
      const ap = RANK[actionPriority(r)];
      if (r.severity < 10)
        expect(RANK[actionPriority({ ...r, severity: r.severity + 1 })]).toBeGreaterThanOrEqual(ap);
      if (r.occurrence < 10)
        expect(RANK[actionPriority({ ...r, occurrence: r.occurrence + 1 })]).toBeGreaterThanOrEqual(ap);
      if (r.detection < 10)
        expect(RANK[actionPriority({ ...r, detection: r.detection + 1 })]).toBeGreaterThanOrEqual(ap);
    }
  });

  it("is severity-first: S 9–10 is never L once the cause is possible; S 1 and O 1 are always L", () => {
    for (const r of all) {
      const ap = actionPriority(r);
      if (r.severity === 1 || r.occurrence === 1) expect(ap).toBe("L");
      else if (r.severity >= 9) expect(ap).not.toBe("L");
      if (r.severity <= 3) expect(ap).not.toBe("H");
    }
  });

  it("weighs occurrence above detection: a frequent cause outranks a hard-to-detect one", () => {
    // Same sum O + D, different split.
    expect(actionPriority({ severity: 8, occurrence: 6, detection: 2 })).toBe("H");
    expect(actionPriority({ severity: 8, occurrence: 2, detection: 6 })).toBe("L");
    expect(actionPriority({ severity: 5, occurrence: 7, detection: 1 })).toBe("H");
    expect(actionPriority({ severity: 5, occurrence: 1, detection: 7 })).toBe("L");
  });

  it("agrees with every worked example in docs/humanoid-fmea.md, both columns", () => {
    const doc = fs.readFileSync(new URL("../../../docs/humanoid-fmea.md", import.meta.url), "utf8");
    const examples = [...doc.matchAll(/^\| (\d+) \| (\d+) \| (\d+) \| ([HML]) \| ([HML]) \|/gm)];
    expect(examples.length).toBeGreaterThanOrEqual(12);
    for (const [, s, o, d, ours, aiag] of examples) {
      const ratings = { severity: Number(s), occurrence: Number(o), detection: Number(d) };
      expect(actionPriority(ratings), `${s}/${o}/${d}`).toBe(ours);
      expect(aiagVdaActionPriority(ratings), `${s}/${o}/${d} AIAG-VDA`).toBe(aiag);
    }
    expect(new Set(examples.map((m) => m[4]))).toEqual(new Set(["H", "M", "L"]));
  });
});

/**
 * An independent transcription of the AIAG-VDA 2019 AP table, written cell by cell: for each
 * severity, ten strings (O = 1 … 10), each ten letters (D = 1 … 10). Written out from the published
 * rows, not generated from the module's bands.
 */
const S9_10 = [
  "LLLLLLLLLL", // O1
  "LLLLMMHHHH", // O2
  "LLLLMMHHHH", // O3
  "MHHHHHHHHH", // O4
  "MHHHHHHHHH", // O5
  "HHHHHHHHHH", // O6
  "HHHHHHHHHH", // O7
  "HHHHHHHHHH", // O8
  "HHHHHHHHHH", // O9
  "HHHHHHHHHH", // O10
];
const S7_8 = [
  "LLLLLLLLLL",
  "LLLLMMMMMM",
  "LLLLMMMMMM",
  "MMMMMMHHHH",
  "MMMMMMHHHH",
  "MHHHHHHHHH",
  "MHHHHHHHHH",
  "HHHHHHHHHH",
  "HHHHHHHHHH",
  "HHHHHHHHHH",
];
const S4_6 = [
  "LLLLLLLLLL",
  "LLLLLLLLLL",
  "LLLLLLLLLL",
  "LLLLLLMMMM",
  "LLLLLLMMMM",
  "LMMMMMMMMM",
  "LMMMMMMMMM",
  "MMMMHHHHHH",
  "MMMMHHHHHH",
  "MMMMHHHHHH",
];
const S2_3 = [
  "LLLLLLLLLL",
  "LLLLLLLLLL",
  "LLLLLLLLLL",
  "LLLLLLLLLL",
  "LLLLLLLLLL",
  "LLLLLLLLLL",
  "LLLLLLLLLL",
  "LLLLMMMMMM",
  "LLLLMMMMMM",
  "LLLLMMMMMM",
];
const S1 = Array(10).fill("LLLLLLLLLL");
const BY_SEVERITY = [S1, S2_3, S2_3, S4_6, S4_6, S4_6, S7_8, S7_8, S9_10, S9_10];
const transcribed = (s: number, o: number, d: number) => (BY_SEVERITY[s - 1] as string[])[o - 1]?.[d - 1];

describe("the AIAG-VDA 2019 action priority", () => {
  it("equals the cell-by-cell transcription in all 1,000 cells", () => {
    let checked = 0;
    for (const r of all) {
      expect(aiagVdaActionPriority(r), `S${r.severity} O${r.occurrence} D${r.detection}`).toBe(
        transcribed(r.severity, r.occurrence, r.detection),
      );
      checked++;
    }
    expect(checked).toBe(1000);
  });

  it("is encoded as the published rows: bands cover every S × O once", () => {
    for (let s = 1; s <= 10; s++)
      for (let o = 1; o <= 10; o++) {
        const rows = AIAG_VDA_2019_AP_TABLE.filter(
          ([sb, ob]) => s >= sb[0] && s <= sb[1] && o >= ob[0] && o <= ob[1],
        );
        expect(rows, `S${s} O${o}`).toHaveLength(1);
      }
    expect(() => aiagVdaActionPriority({ severity: 11, occurrence: 1, detection: 1 })).toThrow(RangeError);
  });

  it("differs from utility402-strict-1 in 169 cells: ours stricter in 153, laxer in 16 (the cells docs/humanoid-fmea.md lists)", () => {
    const stricter: string[] = [];
    const laxer: string[] = [];
    for (const r of all) {
      const ours = RANK[actionPriority(r)];
      const theirs = RANK[aiagVdaActionPriority(r)];
      const cell = `S${r.severity} O${r.occurrence} D${r.detection}`;
      if (ours > theirs) stricter.push(cell);
      if (ours < theirs) laxer.push(cell);
    }
    expect(stricter).toHaveLength(153);
    expect(laxer).toEqual([
      "S2 O8 D5",
      "S2 O8 D6",
      "S2 O9 D5",
      "S2 O9 D6",
      "S2 O10 D5",
      "S2 O10 D6",
      "S3 O8 D5",
      "S3 O8 D6",
      "S3 O9 D5",
      "S3 O9 D6",
      "S3 O10 D5",
      "S3 O10 D6",
      "S7 O2 D5",
      "S7 O2 D6",
      "S8 O2 D5",
      "S8 O2 D6",
    ]);
    // The reviewer's example: S8 O2 D6 is L under our rule, M under AIAG-VDA.
    expect(actionPriority({ severity: 8, occurrence: 2, detection: 6 })).toBe("L");
    expect(aiagVdaActionPriority({ severity: 8, occurrence: 2, detection: 6 })).toBe("M");
  });
});
