import countries from "i18n-iso-countries";
import { z } from "zod";
import { cpvPattern, searchableText } from "./expert-query.ts";

/** The real ISO 3166-1 alpha-3 list (250 codes), not a pattern: "XXX" looks right and is not a country. */
const ALPHA3 = new Set(Object.keys(countries.getAlpha3Codes()));

export const MAX_RESULTS_LIMIT = 30;
export const DEADLINE_TYPES = ["tender", "request-to-participate", "expression-of-interest"] as const;
export const RANKING_MODES = ["bestFit", "deadlineSoonest", "highestValue"] as const;

const isoDate = z.iso.date({ error: "must be a date in YYYY-MM-DD form" });

// `abort` stops at the first failed check, so a field gets one error, not one per rule it breaks.
const searchTerm = z
  .string()
  .min(1, { abort: true })
  .max(100, { abort: true })
  .refine((text) => searchableText(text) !== "", {
    error: "must contain a letter or a digit (quotes, wildcards and backslashes are not searched)",
  });

const countryCode = z
  .string()
  .regex(/^[A-Z]{3}$/, { message: "must be an upper-case ISO 3166-1 alpha-3 code such as DEU", abort: true })
  .refine((code) => ALPHA3.has(code), { error: "is not an ISO 3166-1 alpha-3 country code" });

const cpvCode = z
  .string()
  .regex(
    cpvPattern,
    "must be a CPV code (8 digits, optionally with its check digit: 72000000-5) or a prefix of 2 to 7 digits (722)",
  );

/** A bound pair: `after` later than `before` cannot match anything, so it is a 400 at `after`. */
const boundPairs = [
  ["publishedAfter", "publishedBefore"],
  ["deadlineAfter", "deadlineBefore"],
] as const;

export const TenderShortlistRequest = z
  .strictObject({
    query: searchTerm.optional().meta({
      description:
        "Free text searched in the whole notice (TED full text). Scored higher when it appears in the title.",
      example: "robotics",
    }),
    keywords: z
      .array(searchTerm)
      .max(10)
      .optional()
      .meta({
        description:
          "Further terms; a notice must contain at least one of them. Each is searched as a phrase.",
        example: ["maintenance", "automation"],
      }),
    countries: z
      .array(countryCode)
      .max(30)
      .optional()
      .meta({ description: "Buyer countries, ISO 3166-1 alpha-3.", example: ["DEU", "AUT"] }),
    cpvCodes: z
      .array(cpvCode)
      .max(20)
      .optional()
      .meta({
        description: "CPV codes (exact, 8 digits) or prefixes (2-7 digits: `72` is every IT service).",
        example: ["72", "48000000"],
      }),
    publishedAfter: isoDate.optional().meta({ description: "Published on or after this day." }),
    publishedBefore: isoDate.optional().meta({ description: "Published on or before this day." }),
    deadlineAfter: isoDate
      .optional()
      .meta({ description: "A lot's submission deadline on or after this day." }),
    deadlineBefore: isoDate
      .optional()
      .meta({ description: "A lot's submission deadline on or before this day." }),
    minValue: z
      .number()
      .min(0)
      .optional()
      .meta({
        description:
          "Minimum estimated value in euros (other currencies compared at indicative rates). Notices without a " +
          "known value are kept, with a risk.",
        example: 100000,
      }),
    maxResults: z.int().min(1).max(MAX_RESULTS_LIMIT).default(10),
    rankingMode: z.enum(RANKING_MODES).default("bestFit"),
  })
  .superRefine((input, ctx) => {
    for (const [after, before] of boundPairs) {
      const from = input[after];
      const to = input[before];
      if (typeof from === "string" && typeof to === "string" && from > to) {
        ctx.addIssue({ code: "custom", path: [after], message: `must not be later than ${before} (${to})` });
      }
    }
  })
  .meta({ id: "TenderShortlistRequest" });

export type TenderShortlistInput = z.output<typeof TenderShortlistRequest>;

export const TenderNotice = z
  .looseObject({
    noticeId: z.string().meta({ description: "TED publication number, e.g. 690555-2026." }),
    title: z
      .string()
      .meta({ description: "In English when TED has it, else the buyer's language, else any." }),
    buyerName: z.string().nullable().optional(),
    buyerCountry: z.string().nullable().optional().meta({ description: "ISO 3166-1 alpha-3." }),
    deadline: z.iso
      .datetime()
      .nullable()
      .optional()
      .meta({
        description:
          "The earliest deadline still open, of any kind (`deadlineType`): for a restricted or negotiated " +
          "procedure usually the request to participate. In UTC; a day without a time means the end of that day " +
          "in the notice's time zone.",
      }),
    deadlineType: z
      .enum(DEADLINE_TYPES)
      .nullable()
      .optional()
      .meta({ description: "Which deadline `deadline` is." }),
    deadlines: z
      .array(
        z.strictObject({
          type: z.enum(DEADLINE_TYPES),
          at: z.iso.datetime(),
          open: z.boolean().meta({ description: "Not yet passed when the shortlist was generated." }),
        }),
      )
      .optional()
      .meta({
        description: "Every deadline TED publishes for the notice (every kind and lot), earliest first.",
      }),
    estimatedValue: z.number().nullable().optional(),
    currency: z.string().nullable().optional().meta({ description: "ISO 4217 code of estimatedValue." }),
    fitScore: z.number().min(0).max(100),
    fitReasons: z
      .array(z.string())
      .meta({ description: "One sentence per score component, with its points." }),
    risks: z.array(z.string()),
    sourceUrl: z.url().meta({ description: "The official notice page on ted.europa.eu." }),
    submissionUrls: z.array(z.url()).optional().meta({
      description: "Where the buyer takes tenders or requests to participate (TED `submission-url-lot`).",
    }),
    documentUrls: z
      .array(z.url())
      .optional()
      .meta({ description: "Where the procurement documents are (TED `document-url-lot`)." }),
    noticeType: z.string().nullable().optional(),
    publicationDate: z.iso.date().nullable().optional(),
    cpvCodes: z.array(z.string()).optional(),
    lotCount: z.int().nullable().optional(),
    languages: z.array(z.string()).optional().meta({
      description:
        "The notice's official languages (ISO 639-2, TED `official-language`), else the languages of the buyer's own texts.",
    }),
    submissionLanguages: z
      .array(z.string())
      .optional()
      .meta({ description: "Languages tenders may be submitted in (TED `submission-language`)." }),
  })
  .meta({ id: "TenderNotice" });

export type Tender = z.output<typeof TenderNotice>;

export const TenderShortlistResponse = z
  .strictObject({
    generatedAt: z.iso.datetime(),
    query: z.string().meta({ description: "The TED expert query that was sent." }),
    count: z.int().min(0),
    tenders: z.array(TenderNotice),
    stats: z.strictObject({
      pages: z.int().min(0),
      scanned: z.int().min(0),
      dropped: z.int().min(0),
      duplicates: z.int().min(0),
    }),
  })
  .meta({ id: "TenderShortlistResponse" });

export type TenderShortlistOutput = z.output<typeof TenderShortlistResponse>;
