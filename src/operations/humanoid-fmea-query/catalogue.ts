import fs from "node:fs";
import { z } from "zod";
import { ACTION_PRIORITIES, actionPriority } from "./action-priority.ts";

/**
 * The humanoid-robot FMEA catalogue the service ships (data/humanoid-fmea.json): 96 failure modes,
 * 8 in each of 12 subsystems, authored by us. Read and checked once when the module loads; a
 * malformed catalogue (or one whose action priorities disagree with our rule) stops the service.
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

export const FAILURES_PER_SUBSYSTEM = 8;

const Text = z.string().trim().min(3);
const TextList = z.array(Text).min(1);
const Rating = z.int().min(1).max(10);

/**
 * "Measurable": the acceptance criterion names a number with a unit (20 ms, 1.5 m, 99.9 %, 65 N) or a
 * pass count ("40 of 40 trials").
 */
const UNIT = String.raw`(%|ms|µs|s|min|h|mm|m|km|m/s|rad/s|°/s|°|°C|K|N|N·s|N·m|kN|J|kg|V|kV|A|mA|W|Hz|dB\(A\)|dB|lx|mΩ|MΩ|kPa|MPa|bar)`;
const MEASURABLE = new RegExp(String.raw`\d\s?${UNIT}(?![A-Za-z])|\b\d+ of \d+\b`);

/** One failure mode as stored; `FmeaEntrySchema` adds the cross-field checks. */
export const FmeaEntryFields = z.strictObject({
  id: z.string().regex(/^HFM-[A-Z]{2,3}-0[1-8]$/),
  subsystem: z.enum(SUBSYSTEM_IDS),
  function: Text.meta({ description: "What the element must do, as a requirement." }),
  failureMode: Text,
  effects: TextList,
  hazard: z.strictObject({
    type: z.enum(HAZARD_TYPES).meta({ description: "ISO 12100 hazard group." }),
    description: Text.meta({ description: "The hazardous event and the harm it can cause." }),
  }),
  severity: Rating.meta({
    description: "Worst credible harm to a person: 10 death or irreversible injury, 1 none.",
  }),
  occurrence: Rating.meta({
    description: "Likelihood of the cause with the prevention controls: 1 eliminated.",
  }),
  detection: Rating.meta({ description: "How well the detection controls find it: 1 always, 10 no method." }),
  actionPriority: z.enum(ACTION_PRIORITIES).meta({
    description: "H must act, M should act, L could act: our own rule over S, O, D (docs/humanoid-fmea.md).",
  }),
  causes: TextList,
  preventionControls: TextList,
  detectionControls: TextList,
  verificationTest: z.strictObject({
    method: Text,
    acceptanceCriteria: Text.regex(MEASURABLE, "a measurable pass criterion: a number with its unit"),
  }),
  references: z
    .array(
      z.strictObject({
        standard: z.string().regex(/^[A-Z][A-Za-z0-9/ .:()-]+$/, "a standard number such as ISO 13849-1"),
        topic: Text.meta({ description: "The clause topic it bears on (never the standard's text)." }),
        status: z.literal("draft").optional(),
      }),
    )
    .min(1),
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
  const expected = actionPriority(entry);
  if (entry.actionPriority !== expected) {
    ctx.addIssue({
      code: "custom",
      path: ["actionPriority"],
      message: `our rule gives ${expected} for S${entry.severity} O${entry.occurrence} D${entry.detection}`,
    });
  }
});
export type FmeaEntry = z.infer<typeof FmeaEntrySchema>;

export const CatalogueFileSchema = z
  .strictObject({
    $comment: z.string().optional(),
    version: z.string().min(1),
    entries: z.array(FmeaEntrySchema),
  })
  .superRefine((file, ctx) => {
    const seen = new Set<string>();
    file.entries.forEach((entry, index) => {
      if (seen.has(entry.id)) {
        ctx.addIssue({ code: "custom", path: ["entries", index, "id"], message: `duplicate id ${entry.id}` });
      }
      seen.add(entry.id);
    });
    for (const subsystem of SUBSYSTEMS) {
      const count = file.entries.filter((e) => e.subsystem === subsystem.id).length;
      if (count !== FAILURES_PER_SUBSYSTEM) {
        ctx.addIssue({
          code: "custom",
          path: ["entries"],
          message: `${subsystem.id} has ${count} failure modes, not ${FAILURES_PER_SUBSYSTEM}`,
        });
      }
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
