import { z } from "zod";

const isoDate = z.iso.date({ error: "must be a date in YYYY-MM-DD form" });

export const TenderShortlistRequest = z
  .strictObject({
    query: z
      .string()
      .min(1)
      .max(100)
      .optional()
      .meta({ description: "Free-text search terms.", example: "robotics" }),
    keywords: z.array(z.string().min(1).max(100)).max(10).optional(),
    countries: z
      .array(z.string().regex(/^[A-Z]{3}$/, "must be an ISO 3166-1 alpha-3 code such as DEU"))
      .max(30)
      .optional()
      .meta({ description: "Buyer countries, ISO 3166-1 alpha-3.", example: ["DEU", "FRA"] }),
    cpvCodes: z.array(z.string()).max(20).optional().meta({ description: "CPV codes or prefixes." }),
    publishedAfter: isoDate.optional(),
    publishedBefore: isoDate.optional(),
    deadlineAfter: isoDate.optional(),
    deadlineBefore: isoDate.optional(),
    minValue: z.number().min(0).optional(),
    maxResults: z.int().min(1).max(30).default(10),
    rankingMode: z.enum(["bestFit", "deadlineSoonest", "highestValue"]).default("bestFit"),
  })
  .meta({ id: "TenderShortlistRequest" });

export const TenderNotice = z
  .looseObject({
    noticeId: z.string(),
    title: z.string(),
    buyerName: z.string().nullable().optional(),
    buyerCountry: z.string().nullable().optional(),
    deadline: z.iso.datetime().nullable().optional(),
    estimatedValue: z.number().nullable().optional(),
    currency: z.string().nullable().optional(),
    fitScore: z.number().min(0).max(100),
    fitReasons: z.array(z.string()),
    risks: z.array(z.string()),
    sourceUrl: z.url(),
  })
  .meta({ id: "TenderNotice" });

export const TenderShortlistResponse = z
  .strictObject({
    generatedAt: z.iso.datetime(),
    query: z.string(),
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
