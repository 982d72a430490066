import fs from "node:fs";
import { describe, expect, it } from "vitest";
import { type ActionPriority, actionPriority } from "./action-priority.ts";

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

  it("agrees with every worked example in docs/humanoid-fmea.md", () => {
    const doc = fs.readFileSync(new URL("../../../docs/humanoid-fmea.md", import.meta.url), "utf8");
    const examples = [...doc.matchAll(/^\| (\d+) \| (\d+) \| (\d+) \| ([HML]) \|/gm)];
    expect(examples.length).toBeGreaterThanOrEqual(12);
    for (const [, s, o, d, ap] of examples) {
      expect(
        actionPriority({ severity: Number(s), occurrence: Number(o), detection: Number(d) }),
        `${s}/${o}/${d}`,
      ).toBe(ap);
    }
    expect(new Set(examples.map((m) => m[4]))).toEqual(new Set(["H", "M", "L"]));
  });
});
