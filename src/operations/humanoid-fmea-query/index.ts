import { defineOperation } from "../../catalog/operation.ts";
import { HumanoidFmeaQueryRequest, HumanoidFmeaQueryResponse } from "./schema.ts";

export const humanoidFmeaQuery = defineOperation({
  id: "humanoid-fmea-query",
  method: "POST",
  path: "/v1/humanoid-fmea-query",
  priceUsd: "0.05",
  kind: "sync",
  summary: "Query 96 humanoid-robot failure modes",
  description:
    "Ranked search and filters over a catalogue of 96 humanoid-robot failure modes with hazards, " +
    "controls, verification tests and standard references.",
  tags: ["engineering"],
  inputFrom: "body",
  input: HumanoidFmeaQueryRequest,
  output: HumanoidFmeaQueryResponse,
  outputContentType: "application/json",
  example: { input: { text: "fall on power loss", limit: 5 } },
  errorResponses: [],
});
