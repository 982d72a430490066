import { z } from "zod";

const isoDate = z.iso.date({ error: "must be a date in YYYY-MM-DD form" });

export const ClinicalTrialsQueryRequest = z
  .strictObject({
    query: z.string().min(1).max(200).optional(),
    nctId: z
      .string()
      .regex(/^NCT\d{8}$/, "must be an NCT number such as NCT01234567")
      .optional(),
    condition: z.string().min(1).max(200).optional(),
    intervention: z.string().min(1).max(200).optional(),
    phase: z.string().min(1).max(32).optional(),
    sponsor: z.string().min(1).max(200).optional(),
    startedAfter: isoDate.optional(),
    completedBefore: isoDate.optional(),
    minEnrollment: z.int().min(0).optional(),
    limit: z.int().min(1).max(50).default(10),
    cursor: z.string().min(1).max(512).optional(),
  })
  .meta({ id: "ClinicalTrialsQueryRequest" });

export const ClinicalTrialsQueryResponse = z
  .strictObject({
    count: z.int().min(0),
    total: z.int().min(0),
    items: z.array(z.looseObject({ nctId: z.string() })),
    nextCursor: z.string().nullable(),
    dataset: z.looseObject({ studies: z.int().min(0) }),
  })
  .meta({ id: "ClinicalTrialsQueryResponse" });
