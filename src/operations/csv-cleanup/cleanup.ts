import type { CsvCleanupInput, CsvCleanupOutput } from "./schema.ts";

type Cell = string | number | boolean | null;
type Row = Record<string, Cell>;

/**
 * Cleans rows: a rectangular table over the union of columns, optional trimming,
 * blank-row removal, and first-occurrence deduplication on the key columns.
 * Pure: the same input always gives the same output.
 */
export function cleanupRows(input: CsvCleanupInput): CsvCleanupOutput {
  const columns = unionOfColumns(input.rows);
  const keyColumns = input.keyColumns ?? columns;

  let trimmedValues = 0;
  let blankRowsDropped = 0;
  const rows: Row[] = [];
  const duplicates: CsvCleanupOutput["duplicates"] = [];
  const firstIndexByKey = new Map<string, number>();

  input.rows.forEach((source, index) => {
    // Null-prototype rows: column names such as "__proto__" or "constructor" are plain data here.
    const row: Row = Object.create(null);
    for (const column of columns) {
      let value = Object.hasOwn(source, column) ? (source[column] as Cell) : null;
      if (input.trimStrings && typeof value === "string") {
        const trimmed = value.trim();
        if (trimmed !== value) trimmedValues++;
        value = trimmed;
      }
      row[column] = value;
    }
    if (input.dropBlankRows && isBlank(row)) {
      blankRowsDropped++;
      return;
    }
    const key = rowKey(row, keyColumns, input.caseInsensitiveKeys);
    const firstIndex = firstIndexByKey.get(key);
    if (firstIndex !== undefined) {
      duplicates.push({ index, duplicateOf: firstIndex });
      return;
    }
    firstIndexByKey.set(key, index);
    rows.push(row);
  });

  return {
    rows,
    columns,
    keyColumns,
    stats: {
      inputRows: input.rows.length,
      outputRows: rows.length,
      blankRowsDropped,
      duplicatesDropped: duplicates.length,
      trimmedValues,
    },
    duplicates,
  };
}

function unionOfColumns(rows: readonly Row[]): string[] {
  const seen = new Set<string>();
  for (const row of rows) for (const column of Object.keys(row)) seen.add(column);
  return [...seen];
}

const isBlank = (row: Row) =>
  Object.values(row).every((v) => v === null || (typeof v === "string" && v.trim() === ""));

/**
 * Key values keep their JSON type (the number 1 and the string "1" differ). Strings are
 * compared in Unicode NFC form; case-insensitive comparison folds case with an upper- then
 * lower-case round trip, so "Straße" and "STRASSE" match.
 */
function rowKey(row: Row, keyColumns: readonly string[], caseInsensitive: boolean): string {
  return JSON.stringify(
    keyColumns.map((column) => {
      const value = row[column] as Cell;
      if (typeof value !== "string") return value;
      const normalized = value.normalize("NFC");
      return `s:${caseInsensitive ? normalized.toUpperCase().toLowerCase() : normalized}`;
    }),
  );
}
