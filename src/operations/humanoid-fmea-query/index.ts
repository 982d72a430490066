import { defineOperation } from "../../contract/operation.ts";
import { CATALOGUE } from "./query.ts";
import { HumanoidFmeaQueryRequest, HumanoidFmeaQueryResponse } from "./schema.ts";

const exampleInput = { text: "fall on power loss", limit: 1 };

export const humanoidFmeaQuery = defineOperation({
  id: "humanoid-fmea-query",
  method: "POST",
  path: "/v1/humanoid-fmea-query",
  priceUsd: "0.05",
  kind: "sync",
  summary: "Query 96 humanoid-robot failure modes",
  description:
    "Ranked full-text search (BM25, with engineers' synonyms such as e-stop = emergency stop) and filters " +
    "(subsystem, ISO 12100 hazard type, minimum severity, action priority, cited standard, ids) over our " +
    "catalogue of 96 humanoid-robot failure modes in 12 subsystems: each with function, effects, hazard and " +
    "the harm that fixes its severity, initial and residual severity/occurrence/detection, two action " +
    "priorities (our own rule utility402-strict-1 and the AIAG-VDA 2019 table), for entries with a run-time " +
    "monitor (one that acts, or that alerts people who act) an FMEA-MSR rating (monitor, system response, " +
    "frequency, monitoring, a priority by our rule: the handbook's FMEA-MSR table is not encoded) and which " +
    "rating governs operation, what the detection rating rests on, causes, prevention and " +
    "detection controls, further actions where the residual priority is H, the safety functions it relies " +
    "on with stop category and required PL/SIL, a verification test with a measurable acceptance criterion, " +
    "and standards cited by number, edition and topic. Answers `{ catalogueVersion, count, total, items, " +
    "facets }`. Unknown subsystems, hazard types, standards and ids are 400s listing the valid values, never " +
    "charged. A starting catalogue for a competent person to tailor, not a certified risk assessment.",
  tags: ["engineering"],
  inputFrom: "body",
  input: HumanoidFmeaQueryRequest,
  output: HumanoidFmeaQueryResponse,
  outputContentType: "application/json",
  example: { input: exampleInput, output: CATALOGUE.query({ ...exampleInput, offset: 0 }) },
  errorResponses: [],
  handler: async (input) => ({ body: CATALOGUE.query(input) }),
});
