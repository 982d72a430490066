/**
 * utility402's own action-priority rule (documented in docs/humanoid-fmea.md). It is AP-like in
 * spirit (severity first, occurrence before detection) but it is not the AIAG-VDA table, which is
 * copyrighted and not reproduced here.
 */
export type ActionPriority = "H" | "M" | "L";

export const ACTION_PRIORITIES = ["H", "M", "L"] as const satisfies readonly ActionPriority[];

/** Severity, occurrence and detection ratings, each an integer from 1 to 10. */
export interface Ratings {
  severity: number;
  occurrence: number;
  detection: number;
}

export function actionPriority({ severity: s, occurrence: o, detection: d }: Ratings): ActionPriority {
  // No effect on anyone, or a cause removed by design: nothing left to act on.
  if (s === 1 || o === 1) return "L";
  // Death or irreversible injury possible: act unless the cause is rare AND design verification finds it.
  if (s >= 9) return o >= 3 || d >= 5 ? "H" : "M";
  // Hazardous loss of a primary function (a fall, uncontrolled motion) with warning or protection.
  if (s >= 7) {
    if (o >= 5 || (o >= 4 && d >= 6)) return "H";
    return o >= 3 || d >= 7 ? "M" : "L";
  }
  // Degraded function, first-aid injury at most.
  if (s >= 4) {
    if (o >= 7) return "H";
    return o >= 5 || (o >= 3 && d >= 7) ? "M" : "L";
  }
  // Nuisance only: worth a look when it is both frequent and hard to find.
  return o >= 8 && d >= 7 ? "M" : "L";
}
