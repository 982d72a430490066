import { defineOperation } from "../../catalog/operation.ts";
import { cleanupRows } from "./cleanup.ts";
import { CsvCleanupRequest, CsvCleanupResponse } from "./schema.ts";

export const csvCleanup = defineOperation({
  id: "csv-cleanup",
  method: "POST",
  path: "/v1/csv-cleanup",
  priceUsd: "2.00",
  kind: "sync",
  summary: "Clean and deduplicate CSV/JSON rows",
  description:
    "Normalises up to 500 rows into one rectangular table (union of columns, missing cells null), trims strings, " +
    "drops blank rows and removes duplicates on the key columns (first occurrence kept, input order preserved).",
  tags: ["data"],
  inputFrom: "body",
  input: CsvCleanupRequest,
  output: CsvCleanupResponse,
  outputContentType: "application/json",
  example: {
    input: {
      rows: [
        { id: "A-1", name: " Ada Lovelace ", email: "ADA@example.org" },
        { id: "a-1", name: "Ada Lovelace", email: "ada@example.org" },
        { id: "", name: " ", email: null },
        { id: "B-2", name: "Grace Hopper" },
      ],
      keyColumns: ["id"],
    },
    output: {
      rows: [
        { id: "A-1", name: "Ada Lovelace", email: "ADA@example.org" },
        { id: "B-2", name: "Grace Hopper", email: null },
      ],
      columns: ["id", "name", "email"],
      keyColumns: ["id"],
      stats: { inputRows: 4, outputRows: 2, blankRowsDropped: 1, duplicatesDropped: 1, trimmedValues: 2 },
      duplicates: [{ index: 1, duplicateOf: 0 }],
    },
  },
  errorResponses: [],
  handler: async (input) => ({ body: cleanupRows(input) }),
});
