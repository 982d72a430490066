import { z } from "zod";

type Cell = string | number | boolean | null;

const isCell = (value: unknown): value is Cell =>
  value === null || typeof value === "string" || typeof value === "number" || typeof value === "boolean";

/**
 * A row is checked in place rather than rebuilt by z.record, which silently drops an own
 * "__proto__" key (a legal column name in JSON); the metadata gives the generated JSON Schema.
 */
export const CleanupRow = z
  .custom<Record<string, Cell>>(
    (value) => typeof value === "object" && value !== null && !Array.isArray(value),
    { error: "a row must be an object of cells" },
  )
  .superRefine((row, ctx) => {
    for (const [column, value] of Object.entries(row)) {
      if (!isCell(value)) {
        ctx.addIssue({
          code: "custom",
          path: [column],
          message: "a cell must be a string, number, boolean or null (objects and arrays are not allowed)",
        });
      }
    }
  })
  .meta({
    id: "CleanupRow",
    type: "object",
    additionalProperties: { type: ["string", "number", "boolean", "null"] },
    description: "One row: property values are each a string, number, boolean or null.",
    example: { id: "A-1", name: " Ada Lovelace ", email: "ADA@example.org" },
  });

export const CsvCleanupRequest = z
  .strictObject({
    rows: z.array(CleanupRow).min(1).max(500).meta({ description: "1 to 500 rows." }),
    keyColumns: z
      .array(z.string())
      .min(1)
      .max(25)
      .optional()
      .meta({ description: "Columns that identify a row for deduplication; the whole row when absent." }),
    trimStrings: z.boolean().default(true),
    caseInsensitiveKeys: z.boolean().default(true),
    dropBlankRows: z.boolean().default(true),
  })
  .superRefine((request, ctx) => {
    if (!request.keyColumns) return;
    const present = new Set(request.rows.flatMap((row) => Object.keys(row)));
    request.keyColumns.forEach((column, index) => {
      if (!present.has(column)) {
        ctx.addIssue({
          code: "custom",
          path: ["keyColumns", index],
          message: `key column "${column}" is not a column of any row`,
        });
      }
    });
  })
  .meta({ id: "CsvCleanupRequest" });

export type CsvCleanupInput = z.output<typeof CsvCleanupRequest>;

export const CsvCleanupResponse = z
  .strictObject({
    rows: z
      .array(CleanupRow)
      .meta({ description: "Cleaned rows in input order, every row with every column." }),
    columns: z.array(z.string()).meta({ description: "Union of the input keys, in first-seen order." }),
    keyColumns: z
      .array(z.string())
      .meta({ description: "The columns deduplication compared (all columns when none were given)." }),
    stats: z.strictObject({
      inputRows: z.int().min(0),
      outputRows: z.int().min(0),
      blankRowsDropped: z.int().min(0),
      duplicatesDropped: z.int().min(0),
      trimmedValues: z.int().min(0),
    }),
    duplicates: z
      .array(z.strictObject({ index: z.int().min(0), duplicateOf: z.int().min(0) }))
      .meta({ description: "Dropped rows: input index of the duplicate and of the kept first occurrence." }),
  })
  .meta({ id: "CsvCleanupResponse" });

export type CsvCleanupOutput = z.output<typeof CsvCleanupResponse>;
