import { createHash } from "node:crypto";
import { CsvError, parse as parseCsv } from "csv-parse/sync";
import { z } from "zod";
import { canonicalJson } from "../../canonical-json.ts";
import type { RequestBody } from "../../contract/operation.ts";
import { decodeBody, parseJsonBody, queryToObject } from "../../input/parse-input.ts";
import { type FieldError, invalidRequest, toPointer, zodIssuesToFieldErrors } from "../../problem.ts";
import { cleanupRows } from "./cleanup.ts";
import { ExactNumber, keepNumberLexemes } from "./exact-number.ts";
import { type Cell, type CsvCleanupInput, type CsvCleanupOutput, CsvCleanupRequest } from "./schema.ts";

/** A JSON body's structural rule: a member named twice would silently lose a cell (JSON.parse keeps the last). */
export const CSV_CLEANUP_JSON_LIMITS = { rejectDuplicateKeys: true };

/** The options of a text/csv body, in the query string (booleans as true/false). */
export const CsvQuery = z
  .strictObject({
    keyColumns: z
      .string()
      .optional()
      .meta({
        description:
          "Key columns (as named after header normalisation): the parameter repeated, or names separated by " +
          "commas (a value that is itself a column name is taken whole).",
      }),
    trimStrings: z.enum(["true", "false"]).optional(),
    caseInsensitiveKeys: z.enum(["true", "false"]).optional(),
    dropBlankRows: z.enum(["true", "false"]).optional(),
    normalizeHeaders: z
      .enum(["none", "trim", "snake"])
      .optional()
      .meta({
        description:
          'Header names: "none" (default) exactly as written; "trim" without surrounding white space; "snake" ' +
          'trimmed, NFC, lower case, every run of other than letters and digits one underscore (" Email Address " → ' +
          '"email_address").',
      }),
    delimiter: z.enum([",", ";", "\t", "|"]).optional().meta({ description: "Field separator (default ,)." }),
  })
  .meta({ description: "Options of a text/csv body (a JSON body takes its options in the body, not here)." });

export const CSV_BODY_DOC = {
  schema: z.string().meta({
    description:
      "RFC 4180 CSV: a header line naming the columns, then one record per row (at most 500). Cells are text and " +
      "stay text. Options in the query string.",
  }),
  example: 'id,name,email\r\nA-1," Ada Lovelace ",ADA@example.org\r\na-1,Ada Lovelace,ada@example.org\r\n',
};

const isCsv = (contentType: string | undefined) => /^\s*text\/csv\s*(;|$)/i.test(contentType ?? "");
/** Content types read as JSON: JSON itself, and what clients send for a bare string body. */
const isJson = (contentType: string | undefined) =>
  contentType === undefined || /^\s*(application\/([\w.+-]*\+)?json|text\/plain)\s*(;|$)/i.test(contentType);

/**
 * A csv-cleanup body, from its text or bytes to the validated request, before any payment: JSON (numbers
 * kept exactly as written) or RFC 4180 CSV with its options in the query string. Every problem is
 * a 400 naming the field with a JSON Pointer into the request as JSON (a CSV record is /rows/<i>).
 */
export function readCsvCleanupRequest(
  body: RequestBody,
  contentType: string | undefined,
  query: Record<string, string[]>,
): CsvCleanupInput {
  let raw: unknown;
  if (isCsv(contentType)) raw = csvRequest(decodeBody(body), query);
  else if (isJson(contentType)) {
    const first = Object.keys(query)[0];
    if (first !== undefined) {
      throw invalidRequest([
        {
          pointer: toPointer([first]),
          message: "options of a JSON body go in the body, not the query string",
        },
      ]);
    }
    const text = decodeBody(body);
    raw = parseJsonBody(text, { json: CSV_CLEANUP_JSON_LIMITS });
    keepNumberLexemes(text, raw);
  } else {
    throw invalidRequest([
      {
        pointer: "",
        message: `content type ${contentType} is not read here: send application/json or text/csv`,
      },
    ]);
  }
  const parsed = CsvCleanupRequest.safeParse(raw);
  if (!parsed.success) throw invalidRequest(zodIssuesToFieldErrors(parsed.error.issues));
  return parsed.data;
}

function csvRequest(text: string, query: Record<string, string[]>): Record<string, unknown> {
  const { keyColumns: keyParameters, ...rest } = query;
  const options = queryToObject(rest, CsvQuery) as z.infer<typeof CsvQuery>;
  const checked = CsvQuery.omit({ keyColumns: true }).safeParse(options);
  if (!checked.success) {
    throw invalidRequest(
      zodIssuesToFieldErrors(checked.error.issues).map((error) =>
        error.message.startsWith("Invalid option")
          ? { ...error, message: `${error.message} (a boolean is true or false)` }
          : error,
      ),
    );
  }
  if (text.trim() === "") throw invalidRequest([{ pointer: "", message: "a CSV body is required" }]);
  let records: string[][];
  try {
    records = parseCsv(text, {
      delimiter: checked.data.delimiter ?? ",",
      relax_column_count: true,
      skip_empty_lines: false,
      bom: true,
    }) as string[][];
  } catch (error) {
    if (!(error instanceof CsvError)) throw error;
    const record = (error as CsvError & { records?: number }).records ?? 0;
    throw invalidRequest([
      {
        pointer: record === 0 ? "" : `/rows/${record - 1}`,
        message: `CSV record ${record + 1}: ${error.message}`,
      },
    ]);
  }
  const header = (records[0] ?? []).map((name) =>
    normalizeHeader(name, checked.data.normalizeHeaders ?? "none"),
  );
  const seen = new Map<string, number>();
  header.forEach((name, index) => {
    const first = seen.get(name);
    if (first !== undefined) {
      throw invalidRequest([
        {
          pointer: toPointer(["rows", 0, name]),
          message: `the header names column "${name}" more than once (fields ${first + 1} and ${index + 1})`,
        },
      ]);
    }
    seen.set(name, index);
  });
  const rows: Record<string, string>[] = [];
  const errors: FieldError[] = [];
  for (let r = 1; r < records.length; r++) {
    const record = records[r] as string[];
    const wholeLineEmpty = record.length === 1 && record[0] === "" && header.length > 1;
    if (!wholeLineEmpty && record.length !== header.length) {
      errors.push({
        pointer: `/rows/${r - 1}`,
        message: `CSV record ${r + 1} has ${record.length} fields; the header has ${header.length}`,
      });
      if (errors.length >= 20) break;
      continue;
    }
    rows.push(Object.fromEntries(header.map((name, index) => [name, record[index] ?? ""])));
  }
  if (errors.length > 0) throw invalidRequest(errors);
  const request: Record<string, unknown> = { rows };
  if (keyParameters !== undefined) {
    request.keyColumns = keyParameters.flatMap((value) => (seen.has(value) ? [value] : value.split(",")));
  }
  for (const option of ["trimStrings", "caseInsensitiveKeys", "dropBlankRows"] as const) {
    const value = checked.data[option];
    if (value !== undefined) request[option] = value === "true";
  }
  return request;
}

function normalizeHeader(name: string, mode: "none" | "trim" | "snake"): string {
  if (mode === "none") return name;
  const trimmed = name.trim();
  if (mode === "trim") return trimmed;
  return trimmed
    .normalize("NFC")
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, "_")
    .replace(/^_+|_+$/g, "");
}

const cellText = (value: Cell): string =>
  value instanceof ExactNumber ? value.lexeme : JSON.stringify(value);

/** The answer as JSON text, every number written as the request wrote it. */
export function writeCleanupOutput(output: CsvCleanupOutput): string {
  const rows = output.rows.map(
    (row) =>
      `{${Object.keys(row)
        .map((column) => `${JSON.stringify(column)}:${cellText(row[column] as Cell)}`)
        .join(",")}}`,
  );
  const { rows: _rows, ...rest } = output;
  return `{"rows":[${rows.join(",")}],${JSON.stringify(rest).slice(1)}`;
}

/** Cleans a validated request and writes the answer. */
export function runCleanup(input: CsvCleanupInput): { body: CsvCleanupOutput; bodyText: string } {
  const body = cleanupRows(input);
  return { body, bodyText: writeCleanupOutput(body) };
}

/** sha256 of the RFC 8785 form of a validated request (exact numbers as their lexeme). */
export const requestDigest = (input: CsvCleanupInput) =>
  createHash("sha256").update(canonicalJson(input), "utf8").digest("hex");
