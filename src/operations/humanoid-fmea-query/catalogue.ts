import fs from "node:fs";
import { z } from "zod";
import {
  ACTION_PRIORITIES,
  AIAG_VDA_SCHEME,
  actionPriority,
  aiagVdaActionPriority,
  PRIORITY_RULE,
} from "./action-priority.ts";

/**
 * The humanoid-robot FMEA catalogue the service ships (data/humanoid-fmea.json): 96 failure modes in
 * 12 subsystems, authored by us, with the harms that fix severities, the safety functions entries
 * rely on, and the ids retired by merges. Read and checked once when the module loads; a malformed
 * catalogue (or one whose ratings disagree with the rules) stops the service.
 */
export const CATALOGUE_URL = new URL("../../../data/humanoid-fmea.json", import.meta.url);

/** The 12 subsystems in catalogue order; `code` is the middle part of every id (HFM-ACT-01). */
export const SUBSYSTEMS = [
  { id: "actuation", code: "ACT", name: "Joint actuators and drives" },
  { id: "balance-locomotion", code: "BAL", name: "Balance and locomotion control" },
  { id: "structure-fall", code: "STR", name: "Structure and fall management" },
  { id: "perception", code: "PER", name: "Perception and sensing" },
  { id: "power", code: "PWR", name: "Battery, BMS and power distribution" },
  { id: "compute-software", code: "SW", name: "Compute, software and autonomy" },
  { id: "safety-control", code: "SAF", name: "Safety-related control system" },
  { id: "manipulation", code: "MAN", name: "End effectors and manipulation" },
  { id: "human-interaction", code: "HRI", name: "Human-robot interaction" },
  { id: "communications", code: "COM", name: "Communications and cybersecurity" },
  { id: "environment", code: "ENV", name: "Thermal, environmental, EMC and enclosure" },
  { id: "navigation", code: "NAV", name: "Navigation, localisation and mission execution" },
] as const;
export const SUBSYSTEM_IDS = SUBSYSTEMS.map((s) => s.id) as [
  (typeof SUBSYSTEMS)[number]["id"],
  ...(typeof SUBSYSTEMS)[number]["id"][],
];
export type SubsystemId = (typeof SUBSYSTEM_IDS)[number];

/** The hazard groups of ISO 12100 (Annex B), as slugs. */
export const HAZARD_TYPES = [
  "mechanical",
  "electrical",
  "thermal",
  "noise",
  "vibration",
  "radiation",
  "materials-substances",
  "ergonomic",
  "environment",
  "combination",
] as const;
export type HazardType = (typeof HAZARD_TYPES)[number];

/** The catalogue holds this many failure modes (the spec's count). */
export const CATALOGUE_SIZE = 96;
/** Every subsystem keeps at least this many. */
export const MIN_PER_SUBSYSTEM = 6;

const Text = z.string().trim().min(3);
export const REFERENCE_STATUSES = ["draft", "analogy", "incorporated"] as const;
const TextList = z.array(Text).min(1);
const Rating = z.int().min(1).max(10);

/**
 * "Measurable": the acceptance criterion names a number with a unit (20 ms, 1.5 m, 99.9 %, 65 N) or a
 * pass count ("40 of 40 trials").
 */
const UNIT = String.raw`(%|ms|µs|s|min|h|mm|m|km|m/s|rad/s|°/s|°|°C|K|N|N·s|N·m|kN|J|kg|V|kV|A|mA|W|Hz|dB\(A\)|dB|lx|mΩ|MΩ|kPa|MPa|bar)`;
const MEASURABLE = new RegExp(String.raw`\d\s?${UNIT}(?![A-Za-z])|\b\d+ of \d+\b`);

const Priority = z.enum(ACTION_PRIORITIES);
const Priorities = {
  actionPriority: Priority.meta({
    description:
      "utility402-strict-1, our own rule over S, O, D (docs/humanoid-fmea.md): H must act, M should, L could.",
  }),
  actionPriorityAiagVda2019: Priority.meta({
    description: "The AIAG-VDA FMEA Handbook 2019 Action Priority table for the same S, O, D.",
  }),
};

export const ENTRY_ID = /^HFM-[A-Z]{2,3}-(0[1-9]|1[0-2])$/;

/**
 * What the design-FMEA detection D rests on: the entry's pre-release verification test, by the kind
 * of method and whether it covers every declared condition (every mode, sensor, channel, gap …) or
 * a sample of them. A run-time monitor earns nothing here: FMEA-MSR rates it as monitoring M.
 */
export const VERIFICATION_METHODS = ["specific-test", "scenario-trials", "review"] as const;
export const VERIFICATION_COVERAGES = ["every-declared-condition", "sample"] as const;
export type VerificationMethod = (typeof VERIFICATION_METHODS)[number];
export type VerificationCoverage = (typeof VERIFICATION_COVERAGES)[number];

/**
 * The best (lowest) D a design verification supports, on the catalogue's detection scale: 3–4 a
 * good, specific test of the failure (fault injection, or measurement against a stated limit); 5–6
 * plausible but not proven (trials sampling open-ended conditions: scenes, surfaces, people,
 * commands, attacks); 7–8 only by chance (reviews, audits, logged statistics). 1–2 (a proven method)
 * is not claimed by any entry. A D above the floor is allowed: the rater judged detection weaker.
 */
export const DETECTION_FLOOR: Record<VerificationMethod, Record<VerificationCoverage, number>> = {
  "specific-test": { "every-declared-condition": 3, sample: 4 },
  "scenario-trials": { "every-declared-condition": 5, sample: 6 },
  review: { "every-declared-condition": 7, sample: 8 },
};

/** One failure mode as stored; `FmeaEntrySchema` adds the cross-field checks. */
export const FmeaEntryFields = z.strictObject({
  id: z.string().regex(ENTRY_ID),
  subsystem: z.enum(SUBSYSTEM_IDS),
  function: Text.meta({ description: "What the element must do, as a requirement." }),
  failureMode: Text,
  effects: TextList,
  hazard: z.strictObject({
    type: z.enum(HAZARD_TYPES).meta({ description: "ISO 12100 hazard group." }),
    harm: z
      .string()
      .regex(/^[a-z]+(-[a-z]+)*$/)
      .meta({ description: "The worst credible harm, one of the catalogue's harms; it fixes the severity." }),
    description: Text.meta({ description: "The hazardous event and the harm it can cause." }),
  }),
  initial: z.strictObject({ severity: Rating, occurrence: Rating, detection: Rating, ...Priorities }).meta({
    description:
      "Ratings before the listed prevention and detection controls (detection 10: no method), with both priorities.",
  }),
  severity: Rating.meta({
    description:
      "Severity of the worst credible harm (one harm, one severity): 10 death possible … 1 no effect.",
  }),
  occurrence: Rating.meta({
    description: "Residual: likelihood of the cause with the listed prevention controls; 1 eliminated.",
  }),
  detection: Rating.meta({
    description: "Residual: how well the listed detection controls find it; 1 always, 10 no method.",
  }),
  ...Priorities,
  causes: TextList,
  preventionControls: TextList,
  detectionControls: TextList,
  msr: z
    .strictObject({
      monitor: Text.meta({
        description: "The run-time diagnostic this rating is for: one of the entry's detection controls.",
      }),
      systemResponse: Text.meta({
        description: "What the robot does when the monitor fires, and the safe state it reaches.",
      }),
      frequency: Rating.meta({
        description:
          "F: how often the cause occurs in operation with the prevention controls in place; on our scale the residual occurrence.",
      }),
      monitoring: Rating.meta({
        description:
          "M: how reliably the monitor finds the cause or failure mode in operation and the response reaches the safe state in time: 1 always … 10 not monitored, or a response that comes after the harm.",
      }),
      effectAfterResponse: Text.meta({
        description:
          "The most severe effect that remains once the system response has acted (the FMEA-MSR form's effect after the response); as severe as the effect before it where the response comes after the harm (then M is 10).",
      }),
      severityAfterResponse: Rating.meta({
        description:
          "Severity of effectAfterResponse: below the entry's severity where the response limits the harm, equal to it where the response comes too late (M 10).",
      }),
      actionPriority: Priority.meta({
        description: `${PRIORITY_RULE} applied to S, F and M (our rule; the AIAG-VDA FMEA-MSR table is not encoded).`,
      }),
    })
    .optional()
    .meta({
      description:
        "FMEA-MSR rating (AIAG-VDA supplement, Monitoring and System Response) of the entry's run-time monitor: severity S is the entry's, with frequency F and monitoring M. It governs the risk in operation; the design-FMEA ratings govern design release.",
    }),
  furtherActions: TextList.optional().meta({
    description:
      "Actions still to take: present for every entry whose residual priority is H under either scheme.",
  }),
  safetyFunctions: z
    .array(z.string().regex(/^SF-[A-Z-]+$/))
    .min(1)
    .optional()
    .meta({ description: "Ids of the catalogue's safety functions this entry relies on." }),
  verificationTest: z.strictObject({
    method: Text,
    acceptanceCriteria: Text.regex(MEASURABLE, "a measurable pass criterion: a number with its unit"),
  }),
  designVerification: z
    .strictObject({
      method: z.enum(VERIFICATION_METHODS),
      coverage: z.enum(VERIFICATION_COVERAGES),
    })
    .meta({
      description:
        "What the residual detection rests on: the verification test before release, by kind of method and coverage; detection is never better than DETECTION_FLOOR allows for them. Run-time monitors are rated in msr, not here.",
    }),
  references: z
    .array(
      z.strictObject({
        standard: z
          .string()
          .regex(/^[A-Z][A-Za-z0-9/ .:()-]+$/, "a standard number such as ISO 13849-1:2023"),
        topic: Text.meta({ description: "The clause topic it bears on (never the standard's text)." }),
        status: z.enum(REFERENCE_STATUSES).optional().meta({
          description:
            "draft: not yet published; analogy: cited outside its own scope; incorporated: its content now lives in another standard.",
        }),
      }),
    )
    .min(1),
  supersedes: z
    .array(z.string().regex(/^HFM-[A-Z]{2,3}-0[1-8]$/))
    .min(1)
    .optional()
    .meta({
      description: "Ids of catalogue 1.x entries merged into this one; queries for them find this entry.",
    }),
});

export const FmeaEntrySchema = FmeaEntryFields.superRefine((entry, ctx) => {
  const subsystem = SUBSYSTEMS.find((s) => s.id === entry.subsystem);
  if (subsystem && !entry.id.startsWith(`HFM-${subsystem.code}-`)) {
    ctx.addIssue({
      code: "custom",
      path: ["id"],
      message: `ids of ${subsystem.id} start HFM-${subsystem.code}-`,
    });
  }
  for (const [path, ratings] of [
    [[], entry],
    [["initial"], entry.initial],
  ] as const) {
    const ours = actionPriority(ratings);
    if (ratings.actionPriority !== ours) {
      ctx.addIssue({
        code: "custom",
        path: [...path, "actionPriority"],
        message: `our rule gives ${ours} for S${ratings.severity} O${ratings.occurrence} D${ratings.detection}`,
      });
    }
    const aiag = aiagVdaActionPriority(ratings);
    if (ratings.actionPriorityAiagVda2019 !== aiag) {
      ctx.addIssue({
        code: "custom",
        path: [...path, "actionPriorityAiagVda2019"],
        message: `the AIAG-VDA 2019 table gives ${aiag} for S${ratings.severity} O${ratings.occurrence} D${ratings.detection}`,
      });
    }
  }
  if (entry.initial.severity !== entry.severity) {
    ctx.addIssue({
      code: "custom",
      path: ["initial", "severity"],
      message: "controls do not change severity",
    });
  }
  if (entry.initial.occurrence < entry.occurrence || entry.initial.detection < entry.detection) {
    ctx.addIssue({
      code: "custom",
      path: ["initial"],
      message: "initial occurrence and detection are at least the residual ones (controls only lower them)",
    });
  }
  if (
    (entry.actionPriority === "H" ||
      entry.actionPriorityAiagVda2019 === "H" ||
      entry.msr?.actionPriority === "H") &&
    !entry.furtherActions
  ) {
    ctx.addIssue({
      code: "custom",
      path: ["furtherActions"],
      message: "a residual H (any of its priorities, FMEA-MSR included) needs further actions",
    });
  }
  if (entry.msr) {
    const { msr } = entry;
    if (!entry.detectionControls.includes(msr.monitor))
      ctx.addIssue({
        code: "custom",
        path: ["msr", "monitor"],
        message: "the monitor is one of the entry's detection controls",
      });
    // Our occurrence scale already rates the cause in operation with the prevention controls.
    if (msr.frequency !== entry.occurrence)
      ctx.addIssue({
        code: "custom",
        path: ["msr", "frequency"],
        message: `F is the residual occurrence, ${entry.occurrence}`,
      });
    const ours = actionPriority({
      severity: entry.severity,
      occurrence: msr.frequency,
      detection: msr.monitoring,
    });
    if (msr.actionPriority !== ours)
      ctx.addIssue({
        code: "custom",
        path: ["msr", "actionPriority"],
        message: `our rule gives ${ours} for S${entry.severity} F${msr.frequency} M${msr.monitoring}`,
      });
    // A response after which the harm is as severe as before earns no monitoring credit.
    if (msr.severityAfterResponse >= entry.severity && msr.monitoring !== 10)
      ctx.addIssue({
        code: "custom",
        path: ["msr", "monitoring"],
        message: `the response leaves severity ${msr.severityAfterResponse}: it does not limit the harm, so M is 10`,
      });
    if (msr.monitoring === 10 && msr.severityAfterResponse !== entry.severity)
      ctx.addIssue({
        code: "custom",
        path: ["msr", "severityAfterResponse"],
        message: `M 10: the response comes too late, so the effect after it is as severe as before (${entry.severity})`,
      });
    if (msr.monitoring < 10 && entry.effects.includes(msr.effectAfterResponse))
      ctx.addIssue({
        code: "custom",
        path: ["msr", "effectAfterResponse"],
        message: "a response that limits the harm changes the effect: state what remains after it",
      });
  }
  const floor = DETECTION_FLOOR[entry.designVerification.method][entry.designVerification.coverage];
  if (entry.detection < floor)
    ctx.addIssue({
      code: "custom",
      path: ["detection"],
      message: `${entry.designVerification.method} over ${entry.designVerification.coverage} supports detection ${floor} at best, not ${entry.detection} (run-time monitors are rated in msr.monitoring, not in detection)`,
    });
});
export type FmeaEntry = z.infer<typeof FmeaEntrySchema>;

/** ISO 13849-1 risk graph: severity S1/S2, frequency F1/F2, possibility of avoidance P1/P2 → PLr. */
export const RISK_GRAPH: Record<string, "a" | "b" | "c" | "d" | "e"> = {
  S1F1P1: "a",
  S1F1P2: "b",
  S1F2P1: "b",
  S1F2P2: "c",
  S2F1P1: "c",
  S2F1P2: "d",
  S2F2P1: "d",
  S2F2P2: "e",
};
/** The SIL that IEC 62061 relates to each PL (PL a has none). */
export const SIL_FOR_PL = { a: null, b: 1, c: 1, d: 2, e: 3 } as const;

export const HarmSchema = z.strictObject({
  id: z.string().regex(/^[a-z]+(-[a-z]+)*$/),
  severity: Rating,
  description: Text,
});

export const SafetyFunctionSchema = z
  .strictObject({
    id: z.string().regex(/^SF-[A-Z-]+$/),
    name: Text,
    stopCategory: z
      .union([z.literal(0), z.literal(1), z.literal(2), z.null()])
      .meta({ description: "IEC 60204-1 stop category it uses or leads to; null where it is not a stop." }),
    stopNote: Text,
    riskGraph: z.strictObject({
      severity: z.enum(["S1", "S2"]),
      frequency: z.enum(["F1", "F2"]),
      avoidance: z.enum(["P1", "P2"]),
      basis: Text,
    }),
    requiredPL: z
      .enum(["a", "b", "c", "d", "e"])
      .meta({ description: "ISO 13849-1:2023 required performance level." }),
    silEquivalent: z.union([z.literal(1), z.literal(2), z.literal(3), z.null()]).meta({
      description: "The SIL (IEC 62061:2021) that corresponds to the required PL.",
    }),
  })
  .superRefine((sf, ctx) => {
    const pl = RISK_GRAPH[`${sf.riskGraph.severity}${sf.riskGraph.frequency}${sf.riskGraph.avoidance}`];
    if (sf.requiredPL !== pl)
      ctx.addIssue({ code: "custom", path: ["requiredPL"], message: `the risk graph gives PL ${pl}` });
    if (sf.silEquivalent !== SIL_FOR_PL[sf.requiredPL])
      ctx.addIssue({
        code: "custom",
        path: ["silEquivalent"],
        message: `PL ${sf.requiredPL} relates to SIL ${SIL_FOR_PL[sf.requiredPL]}`,
      });
    // ISO 13850 and IEC 60204-1: an emergency stop is category 0 or 1, never 2.
    if (/emergency stop/i.test(sf.name) && sf.stopCategory !== 0 && sf.stopCategory !== 1)
      ctx.addIssue({
        code: "custom",
        path: ["stopCategory"],
        message: "an emergency stop is stop category 0 or 1",
      });
  });
export type SafetyFunction = z.infer<typeof SafetyFunctionSchema>;

export const CatalogueFileSchema = z
  .strictObject({
    $comment: z.string().optional(),
    version: z.string().regex(/^\d+\.\d+\.\d+$/),
    harms: z.array(HarmSchema).min(1),
    safetyFunctions: z.array(SafetyFunctionSchema).min(1),
    retired: z.array(
      z.strictObject({
        id: z.string().regex(/^HFM-[A-Z]{2,3}-0[1-8]$/),
        mergedInto: z.string().regex(ENTRY_ID),
        reason: Text,
      }),
    ),
    entries: z.array(FmeaEntrySchema),
    versionNotes: z
      .array(z.strictObject({ version: z.string().regex(/^\d+\.\d+\.\d+$/), changes: TextList }))
      .min(1)
      .meta({ description: "What changed in each version, newest first." }),
    priorityRules: z
      .strictObject({
        actionPriority: z.literal(PRIORITY_RULE),
        actionPriorityAiagVda2019: z.literal(AIAG_VDA_SCHEME),
        msrActionPriority: z.literal(PRIORITY_RULE),
      })
      .meta({
        description:
          "The rule behind each priority field, by name: msr.actionPriority is our rule over S, F and M (the AIAG-VDA FMEA-MSR table is not encoded).",
      }),
  })
  .superRefine((file, ctx) => {
    if (file.versionNotes[0]?.version !== file.version)
      ctx.addIssue({
        code: "custom",
        path: ["versionNotes"],
        message: `the first note is for version ${file.version}`,
      });
    const harms = new Map(file.harms.map((h) => [h.id, h]));
    const functions = new Set(file.safetyFunctions.map((sf) => sf.id));
    const retired = new Map(file.retired.map((r) => [r.id, r.mergedInto]));
    if (file.entries.length !== CATALOGUE_SIZE) {
      ctx.addIssue({
        code: "custom",
        path: ["entries"],
        message: `the catalogue holds ${file.entries.length} failure modes, not ${CATALOGUE_SIZE}`,
      });
    }
    const seen = new Set<string>();
    file.entries.forEach((entry, index) => {
      if (seen.has(entry.id)) {
        ctx.addIssue({ code: "custom", path: ["entries", index, "id"], message: `duplicate id ${entry.id}` });
      }
      seen.add(entry.id);
      if (retired.has(entry.id)) {
        ctx.addIssue({ code: "custom", path: ["entries", index, "id"], message: `${entry.id} is retired` });
      }
      const harm = harms.get(entry.hazard.harm);
      if (!harm) {
        ctx.addIssue({
          code: "custom",
          path: ["entries", index, "hazard", "harm"],
          message: `unknown harm ${entry.hazard.harm}`,
        });
      } else if (entry.severity !== harm.severity) {
        ctx.addIssue({
          code: "custom",
          path: ["entries", index, "severity"],
          message: `one harm, one severity: ${harm.id} is ${harm.severity}`,
        });
      }
      (entry.safetyFunctions ?? []).forEach((id, at) => {
        if (!functions.has(id))
          ctx.addIssue({
            code: "custom",
            path: ["entries", index, "safetyFunctions", at],
            message: `unknown safety function ${id}`,
          });
      });
      for (const id of entry.supersedes ?? []) {
        if (retired.get(id) !== entry.id)
          ctx.addIssue({
            code: "custom",
            path: ["entries", index, "supersedes"],
            message: `${id} is not retired into ${entry.id}`,
          });
      }
    });
    for (const [id, into] of retired) {
      if (!file.entries.some((e) => e.id === into && e.supersedes?.includes(id)))
        ctx.addIssue({
          code: "custom",
          path: ["retired"],
          message: `${into} does not list ${id} in supersedes`,
        });
    }
    const order = (id: string) => {
      const [, code, n] = id.split("-");
      return SUBSYSTEMS.findIndex((s) => s.code === code) * 100 + Number(n);
    };
    file.entries.forEach((entry, index) => {
      const previous = file.entries[index - 1];
      if (previous && order(previous.id) >= order(entry.id))
        ctx.addIssue({
          code: "custom",
          path: ["entries", index, "id"],
          message: "entries are in catalogue order",
        });
    });
    for (const subsystem of SUBSYSTEMS) {
      const count = file.entries.filter((e) => e.subsystem === subsystem.id).length;
      if (count < MIN_PER_SUBSYSTEM) {
        ctx.addIssue({
          code: "custom",
          path: ["entries"],
          message: `${subsystem.id} has ${count} failure modes, fewer than ${MIN_PER_SUBSYSTEM}`,
        });
      }
    }
    for (const harm of file.harms) {
      if (!file.entries.some((e) => e.hazard.harm === harm.id))
        ctx.addIssue({ code: "custom", path: ["harms"], message: `harm ${harm.id} is used by no entry` });
    }
  });
export type CatalogueFile = z.infer<typeof CatalogueFileSchema>;

export function parseCatalogue(json: unknown): CatalogueFile {
  const parsed = CatalogueFileSchema.safeParse(json);
  if (!parsed.success) {
    const lines = parsed.error.issues.slice(0, 20).map((i) => `${i.path.join("/")}: ${i.message}`);
    throw new Error(`data/humanoid-fmea.json is invalid:\n${lines.join("\n")}`);
  }
  return parsed.data;
}

export function loadCatalogue(url: URL = CATALOGUE_URL): CatalogueFile {
  return parseCatalogue(JSON.parse(fs.readFileSync(url, "utf8")));
}
