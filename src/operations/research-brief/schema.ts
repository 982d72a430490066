import { z } from "zod";

export const ResearchBriefRequest = z
  .strictObject({
    question: z.string().min(10).max(4000),
    context: z.string().max(8000).optional(),
    requiredSources: z.int().min(2).max(10).default(3),
    maxWords: z.int().min(200).max(1500).default(800),
  })
  .meta({ id: "ResearchBriefRequest" });

export const ResearchJobAccepted = z
  .strictObject({
    jobId: z.uuid(),
    status: z.literal("queued"),
    statusUrl: z.url().meta({ description: "Poll this URL (GET, free) for the job state and result." }),
  })
  .meta({ id: "ResearchJobAccepted" });
