/**
 * Two action-priority schemes over severity (S), occurrence (O) and detection (D), each 1–10.
 *
 * - `actionPriority()` is utility402's own rule, named `utility402-strict-1` (documented in
 *   docs/humanoid-fmea.md). It is stricter than AIAG-VDA in 153 of the 1,000 cells and laxer in 16.
 * - `aiagVdaActionPriority()` is the Action Priority table of the AIAG & VDA FMEA Handbook (1st
 *   edition, 2019), which DFMEA and PFMEA share, encoded as the published rows: one row per severity
 *   band and occurrence band, one column per detection band.
 *
 * H: action must be taken (or the current controls justified); M: should; L: could.
 */
export type ActionPriority = "H" | "M" | "L";

export const ACTION_PRIORITIES = ["H", "M", "L"] as const satisfies readonly ActionPriority[];

/** The name every answer gives our own rule, so nobody mistakes it for AIAG-VDA's. */
export const PRIORITY_RULE = "utility402-strict-1";
/** The name of the AIAG-VDA scheme, as answers give it. */
export const AIAG_VDA_SCHEME = "AIAG-VDA FMEA Handbook 2019, Action Priority table (DFMEA/PFMEA)";

/** Severity, occurrence and detection ratings, each an integer from 1 to 10. */
export interface Ratings {
  severity: number;
  occurrence: number;
  detection: number;
}

/** utility402-strict-1. */
export function actionPriority({ severity: s, occurrence: o, detection: d }: Ratings): ActionPriority {
  // No effect on anyone, or a cause removed by design: nothing left to act on.
  if (s === 1 || o === 1) return "L";
  // Death or irreversible injury possible: act unless the cause is rare AND design verification finds it.
  if (s >= 9) return o >= 3 || d >= 5 ? "H" : "M";
  // Serious or treatable injury.
  if (s >= 7) {
    if (o >= 5 || (o >= 4 && d >= 6)) return "H";
    return o >= 3 || d >= 7 ? "M" : "L";
  }
  // First-aid injury at most.
  if (s >= 4) {
    if (o >= 7) return "H";
    return o >= 5 || (o >= 3 && d >= 7) ? "M" : "L";
  }
  // Nuisance only: worth a look when it is both frequent and hard to find.
  return o >= 8 && d >= 7 ? "M" : "L";
}

type Band = readonly [number, number];
/** One row of the AIAG-VDA table: S band, O band, and the priority for D 7–10, 5–6, 2–4, 1. */
type AiagRow = readonly [
  s: Band,
  o: Band,
  d7to10: ActionPriority,
  d5to6: ActionPriority,
  d2to4: ActionPriority,
  d1: ActionPriority,
];

export const AIAG_VDA_DETECTION_BANDS: readonly Band[] = [
  [7, 10],
  [5, 6],
  [2, 4],
  [1, 1],
];

/**
 * The AIAG-VDA 2019 Action Priority table, row by row as published (S 9–10 first; within a
 * severity band, O 8–10 first). Severity 1 and occurrence 1 rows are L throughout.
 */
export const AIAG_VDA_2019_AP_TABLE: readonly AiagRow[] = [
  [[9, 10], [8, 10], "H", "H", "H", "H"],
  [[9, 10], [6, 7], "H", "H", "H", "H"],
  [[9, 10], [4, 5], "H", "H", "H", "M"],
  [[9, 10], [2, 3], "H", "M", "L", "L"],
  [[9, 10], [1, 1], "L", "L", "L", "L"],
  [[7, 8], [8, 10], "H", "H", "H", "H"],
  [[7, 8], [6, 7], "H", "H", "H", "M"],
  [[7, 8], [4, 5], "H", "M", "M", "M"],
  [[7, 8], [2, 3], "M", "M", "L", "L"],
  [[7, 8], [1, 1], "L", "L", "L", "L"],
  [[4, 6], [8, 10], "H", "H", "M", "M"],
  [[4, 6], [6, 7], "M", "M", "M", "L"],
  [[4, 6], [4, 5], "M", "L", "L", "L"],
  [[4, 6], [2, 3], "L", "L", "L", "L"],
  [[4, 6], [1, 1], "L", "L", "L", "L"],
  [[2, 3], [8, 10], "M", "M", "L", "L"],
  [[2, 3], [6, 7], "L", "L", "L", "L"],
  [[2, 3], [4, 5], "L", "L", "L", "L"],
  [[2, 3], [2, 3], "L", "L", "L", "L"],
  [[2, 3], [1, 1], "L", "L", "L", "L"],
  [[1, 1], [1, 10], "L", "L", "L", "L"],
];

const within = (value: number, [low, high]: Band) => value >= low && value <= high;

/** The AIAG-VDA 2019 action priority: the table row for S and O, the column for D. */
export function aiagVdaActionPriority({ severity, occurrence, detection }: Ratings): ActionPriority {
  const row = AIAG_VDA_2019_AP_TABLE.find(([s, o]) => within(severity, s) && within(occurrence, o));
  const column = AIAG_VDA_DETECTION_BANDS.findIndex((band) => within(detection, band));
  if (!row || column < 0)
    throw new RangeError(`ratings out of range: S${severity} O${occurrence} D${detection}`);
  return row[2 + column] as ActionPriority;
}
