import { z } from "zod";

export const JobIdParam = z.uuid({ error: "must be a UUID" }).meta({ description: "The job id (a UUID)." });

export const JobRecordSchema = z
  .looseObject({
    id: z.uuid(),
    operation: z.string(),
    state: z.string().meta({ description: "The job's current state." }),
    result: z.unknown().optional(),
    error: z.string().nullable().optional(),
    createdAt: z.iso.datetime(),
    updatedAt: z.iso.datetime(),
  })
  .meta({ id: "Job", description: "A job: its state and, once completed, its result." });
