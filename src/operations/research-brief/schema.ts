import { z } from "zod";

export const ResearchBriefRequest = z
  .strictObject({
    question: z.string().min(10).max(4000),
    context: z.string().max(8000).optional(),
    requiredSources: z.int().min(2).max(10).default(3),
    maxWords: z.int().min(200).max(1500).default(800),
  })
  .meta({ id: "ResearchBriefRequest" });
export type ResearchBriefInput = z.output<typeof ResearchBriefRequest>;

export const ResearchJobAccepted = z
  .strictObject({
    jobId: z.uuid(),
    status: z.literal("queued"),
    statusUrl: z.url().meta({ description: "Poll this URL (GET, free) for the job state and result." }),
    pollAfterSeconds: z.int().min(1).meta({ description: "Seconds to wait between polls." }),
  })
  .meta({ id: "ResearchJobAccepted" });

/** The result of a succeeded research job (the `result` of GET /v1/jobs/{id}). */
export const ResearchBriefResult = z
  .strictObject({
    question: z.string(),
    answer: z
      .string()
      .meta({ description: "Markdown; every [n] names an entry of sources that was fetched and read." }),
    wordCount: z
      .int()
      .min(0)
      .meta({ description: "Words of the answer (citation markers not counted), ≤ maxWords." }),
    sources: z.array(
      z.strictObject({
        n: z.int().min(1),
        url: z.url(),
        title: z.string(),
        fetchedAt: z.iso.datetime(),
        excerpt: z.string(),
        publishedAt: z.string().optional(),
        reliability: z.enum(["primary", "reference work", "news", "blog", "unknown"]).meta({
          description:
            "What kind of publisher the address shows (doi.org, .gov, .edu, who.int, europa.eu, journals → primary; " +
            "Wikipedia, Britannica → reference work; news sites or /news/ → news; blog hosts or /blog/ → blog): " +
            "a first hint, not a judgement of the page.",
        }),
        reliabilityReason: z.string().meta({ description: "The signal the reliability note rests on." }),
      }),
    ),
    caveats: z.array(z.string()).min(1).meta({
      description:
        "Explicit limits of the brief: a source shortfall comes first; removed citations, disagreement, recency, machine-generated text.",
    }),
    method: z.strictObject({
      search: z
        .string()
        .regex(
          /^(?:searxng|brave|tavily|wikipedia|crossref)(?:\+(?:searxng|brave|tavily|wikipedia|crossref))*$/,
        )
        .meta({
          description:
            'The search providers of this service, in the order configured, joined by "+": e.g. "wikipedia+crossref" ' +
            '(the keyless default; Crossref is asked only when the question looks scholarly) or "searxng".',
        }),
      model: z.string().meta({ description: 'The model that wrote the answer, or "extractive".' }),
    }),
    generatedAt: z.iso.datetime(),
  })
  .meta({ id: "ResearchBriefResult" });
export type ResearchBrief = z.output<typeof ResearchBriefResult>;
