import { z } from "zod";

export const HumanoidFmeaQueryRequest = z
  .strictObject({
    text: z.string().min(1).max(200).optional(),
    subsystem: z.string().min(1).max(64).optional(),
    hazardType: z.string().min(1).max(64).optional(),
    minSeverity: z.int().min(1).max(10).optional(),
    actionPriority: z.enum(["H", "M", "L"]).optional(),
    standard: z.string().min(1).max(64).optional(),
    ids: z.array(z.string().min(1).max(32)).min(1).max(96).optional(),
    limit: z.int().min(1).max(96).default(20),
    offset: z.int().min(0).max(95).default(0),
  })
  .meta({ id: "HumanoidFmeaQueryRequest" });

export const HumanoidFmeaQueryResponse = z
  .strictObject({
    count: z.int().min(0),
    total: z.int().min(0),
    items: z.array(z.looseObject({ id: z.string() })),
    facets: z.strictObject({
      subsystem: z.record(z.string(), z.int()),
      actionPriority: z.record(z.string(), z.int()),
    }),
  })
  .meta({ id: "HumanoidFmeaQueryResponse" });
