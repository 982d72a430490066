import { z } from "zod";
import { ExactNumber } from "./exact-number.ts";

/** A cell: a number the request wrote in a way a double would change is an ExactNumber (see exact-number.ts). */
export type Cell = string | number | boolean | null | ExactNumber;

/** Columns over all rows at most: the answer has rows × columns cells. */
export const MAX_COLUMNS = 1000;

const isCell = (value: unknown): value is Cell =>
  value === null ||
  typeof value === "string" ||
  typeof value === "number" ||
  typeof value === "boolean" ||
  value instanceof ExactNumber;

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
      .meta({
        description:
          "Columns that identify a row for deduplication; the whole row when absent (then compared exactly, " +
          "case included).",
      }),
    trimStrings: z.boolean().default(true),
    caseInsensitiveKeys: z
      .boolean()
      .default(true)
      .meta({
        description:
          "Compare the values of the named keyColumns without regard to case (each such match is reported). " +
          "Never applies to columns the caller did not name.",
      }),
    dropBlankRows: z.boolean().default(true),
  })
  .superRefine((request, ctx) => {
    const present = new Set<string>();
    for (let index = 0; index < request.rows.length; index++) {
      for (const column of Object.keys(request.rows[index] as object)) {
        present.add(column);
        if (present.size > MAX_COLUMNS) {
          ctx.addIssue({
            code: "custom",
            path: ["rows", index, column],
            message: `the rows have more than ${MAX_COLUMNS} distinct columns`,
          });
          return;
        }
      }
    }
    if (!request.keyColumns) return;
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
      .array(
        z.strictObject({
          index: z.int().min(0),
          duplicateOf: z.int().min(0),
          match: z.enum(["exact", "normalized", "case-folded"]).meta({
            description:
              '"exact": every compared value is the same as given (after trimming, when trimStrings); ' +
              '"normalized": equal only as Unicode NFC text or as the same number spelled otherwise (1 and 1.0); ' +
              '"case-folded": equal only without regard to case, in a named key column.',
          }),
          differences: z
            .array(
              z.strictObject({
                column: z.string(),
                kind: z.enum(["case", "unicode-form", "number-spelling"]),
              }),
            )
            .meta({
              description:
                "The compared columns whose values were not the same as given, and how they matched.",
            }),
        }),
      )
      .meta({
        description:
          "Dropped rows: input index of the duplicate and of the kept first occurrence, and how they matched.",
      }),
  })
  .meta({ id: "CsvCleanupResponse" });

export type CsvCleanupOutput = z.output<typeof CsvCleanupResponse>;
