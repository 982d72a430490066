import { z } from "zod";
import { cursorFingerprint, decodeCursor, searchTerms } from "./cursor.ts";

const isoDate = z.iso.date({ error: "must be a date in YYYY-MM-DD form" });

/** The registry's phase values (designModule.phases), and the spellings people write for them. */
export const PHASES = ["EARLY_PHASE1", "PHASE1", "PHASE2", "PHASE3", "PHASE4", "NA"] as const;
export type Phase = (typeof PHASES)[number];

function normalizePhase(value: string): Phase | undefined {
  const squeezed = value.toUpperCase().replace(/[\s_-]+/g, "");
  if (squeezed === "NA" || squeezed === "N/A" || squeezed === "NOTAPPLICABLE") return "NA";
  const match = /^(EARLY)?(?:PHASE)?([1-4]|I{1,3}|IV)$/.exec(squeezed);
  if (!match) return undefined;
  const digit = { I: "1", II: "2", III: "3", IV: "4" }[match[2] as string] ?? (match[2] as string);
  if (match[1]) return digit === "1" ? "EARLY_PHASE1" : undefined;
  return `PHASE${digit}` as Phase;
}

/** Free text the full-text index can search: at least one letter or digit. */
const searchText = (what: string) =>
  z
    .string()
    .min(1)
    .max(200)
    .refine((value) => searchTerms(value).length > 0, `${what} must contain a letter or a digit`)
    .refine((value) => searchTerms(value).length <= 32, `${what} may hold at most 32 words`);

export const ClinicalTrialsQueryRequest = z
  .strictObject({
    query: searchText("query").optional().meta({
      description:
        "Full-text search (every word must match) over titles, conditions, interventions, sponsor and outcome titles; ranked by BM25.",
    }),
    nctId: z
      .string()
      .regex(/^[Nn][Cc][Tt]\d{8}$/, "must be an NCT number such as NCT01234567")
      .transform((value) => value.toUpperCase())
      .optional()
      .meta({ description: "An NCT number, any case (nct01234567 is read as NCT01234567)." }),
    condition: searchText("condition")
      .optional()
      .meta({ description: "Words of a condition or keyword, as a phrase." }),
    intervention: searchText("intervention")
      .optional()
      .meta({ description: "Words of an intervention name or other name, as a phrase." }),
    phase: z
      .string()
      .min(1)
      .max(32)
      .transform((value, ctx) => {
        const phase = normalizePhase(value);
        if (phase) return phase;
        ctx.issues.push({
          code: "custom",
          input: value,
          message: `unknown phase "${value}"; use one of: ${PHASES.join(", ")}`,
        });
        return z.NEVER;
      })
      .optional()
      .meta({
        description: `One of ${PHASES.join(", ")} ("Phase 2", "phase-2" and "II" are read as PHASE2).`,
      }),
    sponsor: searchText("sponsor")
      .optional()
      .meta({ description: "Words of the lead sponsor's name, as a phrase." }),
    startedAfter: isoDate
      .optional()
      .meta({ description: "Start date on or after this day (a month-only date counts as its first day)." }),
    completedBefore: isoDate.optional().meta({
      description: "Completion date on or before this day (a month-only date counts as its first day).",
    }),
    minEnrollment: z.int().min(0).optional(),
    includeSecondary: z.boolean().default(false).meta({
      description:
        "Also return each study's secondary outcomes (`secondaryOutcomes`) and other pre-specified or post-hoc ones (`otherOutcomes`), in full.",
    }),
    limit: z.int().min(1).max(50).default(10),
    cursor: z
      .string()
      .min(1)
      .max(512)
      .optional()
      .meta({ description: "The nextCursor of the previous page, with the same filters." }),
  })
  .superRefine((request, ctx) => {
    if (request.cursor === undefined) return;
    const cursor = decodeCursor(request.cursor, request.query !== undefined);
    if (!cursor) {
      ctx.addIssue({
        code: "custom",
        path: ["cursor"],
        message: "malformed cursor: pass a nextCursor as it was given",
      });
    } else if (cursor.filters !== cursorFingerprint(request)) {
      ctx.addIssue({
        code: "custom",
        path: ["cursor"],
        message: "this cursor belongs to a query with other filters: repeat the filters of the first page",
      });
    }
  })
  .meta({ id: "ClinicalTrialsQueryRequest" });

export type ClinicalTrialsQueryInput = z.output<typeof ClinicalTrialsQueryRequest>;

const nullableText = z.string().nullable();

const DenominatorSchema = z
  .strictObject({
    groupId: nullableText,
    units: nullableText.meta({ description: 'What was counted, e.g. "Participants", "Eyes".' }),
    value: nullableText.meta({ description: "As the registry states it." }),
    n: z.int().nullable().meta({ description: "The value as an integer (null when it is not one)." }),
  })
  .meta({
    id: "ClinicalTrialsDenominator",
    description: "The number analysed in a group (CT.gov `denoms`, AACT outcome_counts).",
  });

const OutcomeSchema = z
  .strictObject({
    type: nullableText.meta({ description: "PRIMARY, SECONDARY, OTHER_PRE_SPECIFIED or POST_HOC." }),
    title: nullableText,
    description: nullableText,
    populationDescription: nullableText.meta({ description: "Who was analysed (the registry's text)." }),
    timeFrame: nullableText,
    paramType: nullableText,
    dispersionType: nullableText,
    unit: nullableText,
    groups: z.array(z.strictObject({ id: nullableText, title: nullableText, description: nullableText })),
    denominators: z.array(DenominatorSchema).meta({
      description:
        "The number analysed per group (and per unit analysed): 40 of 92 Participants reads as 43.5 %.",
    }),
    measurements: z.array(
      z.strictObject({
        groupId: nullableText,
        classTitle: nullableText,
        categoryTitle: nullableText,
        value: nullableText,
        spread: nullableText,
        lowerLimit: nullableText,
        upperLimit: nullableText,
        unit: nullableText,
        comment: nullableText.meta({
          description: 'The registry\'s comment on the value, e.g. why it is "NA".',
        }),
        classDenominators: z.array(DenominatorSchema).meta({
          description: "The number analysed in this group for this class, where the class states its own.",
        }),
      }),
    ),
    analyses: z.array(
      z.strictObject({
        groupIds: z.array(z.string()),
        groupDescription: nullableText,
        statisticalMethod: nullableText,
        statisticalComment: nullableText,
        paramType: nullableText,
        paramValue: nullableText,
        dispersionType: nullableText.meta({
          description: "Of the estimate: STANDARD_DEVIATION or STANDARD_ERROR_OF_MEAN.",
        }),
        dispersionValue: nullableText,
        ciPercent: nullableText,
        ciNumSides: nullableText.meta({ description: "ONE_SIDED or TWO_SIDED." }),
        ciLowerLimit: nullableText,
        ciUpperLimit: nullableText,
        estimateComment: nullableText,
        nonInferiorityType: nullableText,
        nonInferiorityComment: nullableText,
        pValue: z.number().nullable().meta({
          description:
            'Parsed from pValueRaw: "<0.001" gives 0.001. Null when the text is not a p-value in (0, 1], e.g. "0.000" (a rounding; the text is kept in pValueRaw).',
        }),
        pValueComparator: z.enum(["<", "<=", "=", ">=", ">"]).nullable(),
        pValueRaw: nullableText,
        pValueComment: nullableText,
      }),
    ),
  })
  .meta({ id: "ClinicalTrialsOutcome" });

const TrialSummarySchema = z
  .strictObject({
    nctId: z.string(),
    title: z.string(),
    officialTitle: nullableText,
    conditions: z.array(z.string()),
    interventions: z.array(z.strictObject({ type: nullableText, name: z.string() })),
    phases: z.array(z.string()),
    enrollment: z.int().nullable(),
    enrollmentType: nullableText,
    sponsor: nullableText,
    sponsorClass: nullableText,
    startDate: nullableText.meta({ description: "As registered: YYYY-MM-DD or YYYY-MM." }),
    completionDate: nullableText,
    resultsFirstPosted: nullableText.meta({ description: "The day results were first posted." }),
    counts: z.strictObject({ endpoints: z.int(), measurements: z.int(), analyses: z.int() }).meta({
      description:
        "Counted the AACT way over every outcome measure (primary, secondary, other): outcome measures, category measurements, analyses.",
    }),
    primaryOutcomes: z.array(OutcomeSchema),
    secondaryOutcomes: z
      .array(OutcomeSchema)
      .optional()
      .meta({ description: "With includeSecondary: true." }),
    otherOutcomes: z
      .array(OutcomeSchema)
      .optional()
      .meta({ description: "With includeSecondary: true: other pre-specified and post-hoc outcomes." }),
    adverseEvents: z
      .strictObject({
        groups: z.array(
          z.strictObject({
            id: nullableText,
            title: nullableText,
            deathsAffected: z.int().nullable(),
            deathsAtRisk: z.int().nullable(),
            seriousAffected: z.int().nullable(),
            seriousAtRisk: z.int().nullable(),
            otherAffected: z.int().nullable(),
            otherAtRisk: z.int().nullable(),
          }),
        ),
      })
      .nullable(),
    sourceUrl: z.url(),
    recordVersion: z
      .strictObject({
        asOf: isoDate.nullable().meta({
          description:
            "The day of the registry's data this copy of the record reflects (derivedSection.miscInfoModule.versionHolder); null when the record does not state it.",
        }),
        lastUpdatePosted: isoDate.nullable().meta({
          description:
            "When the registry posted this version of the record (statusModule.lastUpdatePostDateStruct): the version the summary was built from.",
        }),
        lastUpdateSubmitted: isoDate.nullable().meta({
          description: "When the sponsor submitted this version (statusModule.lastUpdateSubmitDate).",
        }),
      })
      .meta({
        id: "ClinicalTrialsRecordVersion",
        description:
          "Which version of the registry record was ingested: a later version on clinicaltrials.gov (a newer lastUpdatePosted) may differ.",
      }),
  })
  .meta({ id: "TrialSummary" });

export const DatasetSchema = z
  .strictObject({
    kind: z.enum(["sample", "full"]),
    sample: z.boolean().meta({ description: "True unless a complete API ingest is loaded." }),
    snapshotDate: isoDate.meta({
      description:
        "What every loaded record is at least as current as (the oldest copy, not the newest); snapshotDateMeaning says what it is based on.",
    }),
    snapshotDateBasis: z.enum(["record-as-of", "last-update-posted", "ingest-start", "ingest-clock"]).meta({
      description:
        "record-as-of: the oldest registry copy date among the records; last-update-posted: the oldest last update of records without copy dates (a lower bound of their copy), older than every copy date; ingest-start: the day an API ingest started reading the registry, bounding its records without copy dates; ingest-clock: the day undated records were loaded.",
    }),
    snapshotDateMeaning: z
      .string()
      .meta({ description: "What snapshotDate means for this dataset, in one sentence." }),
    recordsAsOf: z.strictObject({ oldest: isoDate, newest: isoDate }).nullable().meta({
      description:
        "The oldest and newest registry copy dates (recordVersion.asOf) among the loaded records; null when no record states one.",
    }),
    studies: z.int().min(0),
    endpoints: z.int().min(0),
    measurements: z.int().min(0),
    analyses: z.int().min(0),
    source: z.string(),
    sourceUrl: z
      .string()
      .nullable()
      .meta({ description: "The API the ingest read (null: a folder of records)." }),
    registry: z
      .boolean()
      .meta({ description: "True when the source is the ClinicalTrials.gov registry itself." }),
    selectionRule: z
      .enum(["start-date", "results-first-posted"])
      .nullable()
      .meta({ description: "Which studies an API ingest asked for (null: a folder of records)." }),
    ruleCounts: z
      .record(z.string(), z.int().nullable())
      .nullable()
      .meta({ description: "Each selection rule's count, as the API answered when the ingest started." }),
    skippedRecords: z.int().min(0).meta({ description: "Records the ingest skipped (no NCT number)." }),
    description: z.string().meta({ description: "What is loaded, in one sentence." }),
  })
  .meta({ id: "ClinicalTrialsDataset", description: "Totals counted from the loaded database." });

export type Dataset = z.output<typeof DatasetSchema>;

export const ClinicalTrialsQueryResponse = z
  .strictObject({
    count: z.int().min(0).meta({ description: "Items on this page." }),
    total: z.int().min(0).meta({ description: "Studies matching the filters, over all pages." }),
    items: z.array(TrialSummarySchema),
    nextCursor: z.string().nullable(),
    dataset: DatasetSchema,
  })
  .meta({ id: "ClinicalTrialsQueryResponse" });

export type ClinicalTrialsQueryOutput = z.output<typeof ClinicalTrialsQueryResponse>;
