import { defineOperation } from "../../catalog/operation.ts";
import { TenderShortlistRequest, TenderShortlistResponse } from "./schema.ts";

const common = {
  priceUsd: "0.15",
  kind: "sync",
  tags: ["tenders"],
  input: TenderShortlistRequest,
  output: TenderShortlistResponse,
  outputContentType: "application/json",
  example: {
    input: { query: "robotics", countries: ["DEU"], maxResults: 5 },
    output: {
      generatedAt: "2026-11-21T09:00:00Z",
      query: "robotics",
      count: 0,
      tenders: [],
      stats: { pages: 1, scanned: 0, dropped: 0, duplicates: 0 },
    },
  },
  errorResponses: [
    { status: 502, description: "The official notice upstream (TED) is unavailable; nothing is charged." },
  ],
} as const;

export const tenderShortlist = defineOperation({
  ...common,
  id: "tender-shortlist",
  method: "POST",
  path: "/v1/tender-shortlist",
  summary: "Shortlist current EU public tenders (TED)",
  description:
    "Up to 30 current EU procurement notices from TED that fit a profile, normalised (deadline, value, buyer) " +
    "and scored 0-100 with reasons, risks and the official notice link.",
  inputFrom: "body",
  bodyOptional: true,
});

export const tenderShortlistGet = defineOperation({
  ...common,
  id: "tender-shortlist-get",
  method: "GET",
  path: "/v1/tender-shortlist",
  summary: "Shortlist current EU public tenders (TED), query-string form",
  description:
    "The GET compatibility form of POST /v1/tender-shortlist: the same fields as query parameters " +
    "(arrays repeated or comma-separated), the same validation, price and response.",
  inputFrom: "query",
});
