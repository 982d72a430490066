import { z } from "zod";

export const JobIdParam = z.uuid({ error: "must be a UUID" }).meta({ description: "The job id (a UUID)." });

export const JobRecordSchema = z
  .strictObject({
    id: z.uuid(),
    type: z.string().meta({ description: "The operation that queued the job, e.g. research-brief." }),
    status: z.enum(["awaiting_payment", "queued", "running", "succeeded", "failed"]).meta({
      description:
        "queued → running → succeeded | failed. While not finished the answer carries Retry-After (seconds to wait before polling again).",
    }),
    createdAt: z.iso.datetime(),
    startedAt: z.iso.datetime().optional(),
    finishedAt: z.iso.datetime().optional(),
    progress: z
      .strictObject({ stage: z.string(), fraction: z.number().min(0).max(1).optional() })
      .optional()
      .meta({ description: "What a running job is doing." }),
    result: z.unknown().optional().meta({ description: "The operation's result, once succeeded." }),
    error: z
      .strictObject({ code: z.string(), message: z.string() })
      .optional()
      .meta({ description: "Why the job failed." }),
  })
  .meta({ id: "Job", description: "A job: its state and, once completed, its result." });
