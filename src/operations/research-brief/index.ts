import { defineOperation } from "../../catalog/operation.ts";
import { ResearchBriefRequest, ResearchJobAccepted } from "./schema.ts";

export const researchBrief = defineOperation({
  id: "research-brief",
  method: "POST",
  path: "/v1/research-brief",
  priceUsd: "5.00",
  kind: "async",
  summary: "Queue a researched brief with cited sources",
  description:
    "Queues a research job that answers the question concisely with source URLs and explicit caveats. " +
    "Answers 202 with a status URL; poll GET /v1/jobs/{id} (free) for the state and the result.",
  tags: ["research"],
  inputFrom: "body",
  input: ResearchBriefRequest,
  output: ResearchJobAccepted,
  outputContentType: "application/json",
  example: {
    input: { question: "Which EU regulations govern humanoid robots in warehouses?", requiredSources: 3 },
    output: {
      jobId: "0f8fad5b-d9cb-469f-a165-70867728950e",
      status: "queued",
      statusUrl: "http://localhost:8402/v1/jobs/0f8fad5b-d9cb-469f-a165-70867728950e",
    },
  },
  errorResponses: [{ status: 503, description: "The research worker is unavailable; no payment is taken." }],
});
