import { defineOperation } from "../../catalog/operation.ts";
import { ClinicalTrialsQueryRequest, ClinicalTrialsQueryResponse } from "./schema.ts";

export const clinicalTrialsQuery = defineOperation({
  id: "clinical-trials-query",
  method: "POST",
  path: "/v1/clinical-trials-query",
  priceUsd: "0.05",
  kind: "sync",
  summary: "Query trial-level clinical results summaries",
  description:
    "Full-text search and filters over trial-level results summaries of ClinicalTrials.gov studies " +
    "started on or after 2020-01-01, with endpoint, measurement and analysis counts.",
  tags: ["health"],
  inputFrom: "body",
  input: ClinicalTrialsQueryRequest,
  output: ClinicalTrialsQueryResponse,
  outputContentType: "application/json",
  example: { input: { query: "semaglutide", limit: 5 } },
  errorResponses: [],
});
