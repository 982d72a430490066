import { z } from "zod";
import { ACTION_PRIORITIES, PRIORITY_RULE } from "./action-priority.ts";
import {
  FmeaEntryFields,
  HAZARD_TYPES,
  SafetyFunctionSchema,
  SUBSYSTEM_IDS,
  SUBSYSTEMS,
} from "./catalogue.ts";
import { CATALOGUE, DETECTION_BASES, OPERATIONAL_RATINGS } from "./query.ts";
import { tokenize } from "./search.ts";

export const MAX_LIMIT = CATALOGUE.entries.length;
export const DEFAULT_LIMIT = 20;

const oneOf = (values: readonly string[]) => values.join(", ");

// Field-level refinements, so that each message carries the field's own pointer (/standard, /ids/2).
// A length check does not stop refinements: a string that already failed one gets no second issue.
const fits = (text: string, max: number) => text.length >= 1 && text.length <= max;
const Text = z
  .string()
  .min(1)
  .max(200)
  .superRefine((text, ctx) => {
    if (fits(text, 200) && tokenize(text, "query").length === 0)
      ctx.addIssue({ code: "custom", message: "no searchable word in `text`" });
  })
  .meta({
    description:
      "Ranked full-text search (BM25) over every field of an entry, with light English stemming " +
      "(falls = falling = fall). Entries matching no word are left out; best first, ties in catalogue order.",
  });

const Standard = z
  .string()
  .min(1)
  .max(64)
  .superRefine((standard, ctx) => {
    if (fits(standard, 64) && !CATALOGUE.knowsStandard(standard)) {
      ctx.addIssue({
        code: "custom",
        message: `no cited standard matches "${standard}"; the catalogue cites: ${oneOf(CATALOGUE.standards)}`,
      });
    }
  })
  .meta({
    description:
      "A standard number, whole (with its document type and year: `ISO/TS 15066:2016`, `IEC TS 62998-1:2019`, " +
      "`ISO 13855:2024`) or a leading part ending at a part or year boundary: `ISO 13849` matches " +
      "ISO 13849-1:2023 and ISO 13849-2:2012; `TS 15066`, `IEC 62998-1` and `10218-2` match too. Case, " +
      "spacing and `ISO/TS` versus `ISO TS` are ignored; a year the catalogue does not cite is refused.",
  });

const Id = z
  .string()
  .min(1)
  .max(32)
  .superRefine((id, ctx) => {
    if (fits(id, 32) && !CATALOGUE.ids.has(id) && !CATALOGUE.retired.has(id)) {
      ctx.addIssue({
        code: "custom",
        message: `unknown id "${id}"; ids are HFM-<code>-<nn> with code one of ${oneOf(SUBSYSTEMS.map((s) => s.code))}`,
      });
    }
  })
  .meta({
    description:
      "An entry id. An id retired by a merge (catalogue 2.0.0 and later) finds the entry it was merged into (its `supersedes`).",
  });

export const HumanoidFmeaQueryRequest = z
  .strictObject({
    text: Text.optional(),
    subsystem: z
      .enum(SUBSYSTEM_IDS, { error: () => `unknown subsystem; valid subsystems: ${oneOf(SUBSYSTEM_IDS)}` })
      .optional(),
    hazardType: z
      .enum(HAZARD_TYPES, {
        error: () => `unknown hazard type; ISO 12100 hazard types: ${oneOf(HAZARD_TYPES)}`,
      })
      .optional(),
    minSeverity: z
      .int()
      .min(1)
      .max(10)
      .optional()
      .meta({ description: "Only entries with severity ≥ this." }),
    actionPriority: z.enum(ACTION_PRIORITIES).optional(),
    standard: Standard.optional(),
    ids: z.array(Id).min(1).max(MAX_LIMIT).optional().meta({ description: "Only these entries." }),
    limit: z.int().min(1).max(MAX_LIMIT).default(DEFAULT_LIMIT),
    offset: z
      .int()
      .min(0)
      .max(MAX_LIMIT - 1)
      .default(0),
  })
  .meta({
    id: "HumanoidFmeaQueryRequest",
    description:
      "Every filter narrows the result (AND). `total` and the facets count all entries that match, " +
      "before `offset` and `limit` take a page of them.",
    example: { text: "fall on power loss", minSeverity: 8, limit: 5 },
  });

export type HumanoidFmeaQueryInput = z.output<typeof HumanoidFmeaQueryRequest>;

const FmeaItem = FmeaEntryFields.extend({
  priorityRule: z.literal(PRIORITY_RULE).meta({
    description:
      "The name of the rule behind `actionPriority` (our own, stricter than AIAG-VDA in 153 cells, laxer in 16); " +
      "`actionPriorityAiagVda2019` is the AIAG-VDA 2019 table.",
  }),
  operationalRating: z.enum(OPERATIONAL_RATINGS).meta({
    description:
      "The rating that governs the risk in operation: FMEA-MSR (`msr`) where a run-time monitor and its system response limit the harm (M below 10), otherwise DFMEA. The DFMEA ratings always govern design release.",
  }),
  detectionBasis: z.enum(DETECTION_BASES).meta({
    description:
      "What the residual `detection` rests on: the pre-release design verification (`designVerification`) for every entry; a run-time monitor is rated in `msr.monitoring`, never in `detection`.",
  }),
  safetyFunctions: z.array(SafetyFunctionSchema).min(1).optional().meta({
    description:
      "The safety functions this entry relies on, each with its stop category and required PL/SIL.",
  }),
  rpn: z.int().min(1).max(1000).meta({
    description: "severity × occurrence × detection, for comparison only; actionPriority is the priority.",
  }),
  score: z
    .number()
    .min(0)
    .optional()
    .meta({ description: "BM25 relevance (3 decimals); present with `text`." }),
}).meta({ id: "HumanoidFailureMode" });

const counts = (keys: readonly string[]) =>
  z.strictObject(Object.fromEntries(keys.map((key) => [key, z.int().min(0)])) as Record<string, z.ZodInt>);

export const HumanoidFmeaQueryResponse = z
  .strictObject({
    catalogueVersion: z
      .string()
      .regex(/^\d+\.\d+\.\d+$/)
      .meta({ description: "Version of the catalogue that answered (semantic versioning)." }),
    count: z.int().min(0).meta({ description: "Items in this page." }),
    total: z.int().min(0).meta({ description: "Entries matching every filter and `text`, before paging." }),
    items: z.array(FmeaItem),
    facets: z
      .strictObject({
        subsystem: counts(SUBSYSTEM_IDS),
        actionPriority: counts(ACTION_PRIORITIES),
      })
      .meta({
        description:
          "Counts over the same matching entries as `total` (every key present, zeros included), so each " +
          "facet sums to `total`.",
      }),
  })
  .meta({ id: "HumanoidFmeaQueryResponse" });

export type HumanoidFmeaQueryOutput = z.output<typeof HumanoidFmeaQueryResponse>;
