import { decimalKey, ExactNumber, lexemeOf } from "./exact-number.ts";
import type { Cell, CsvCleanupInput, CsvCleanupOutput } from "./schema.ts";

type Row = Record<string, Cell>;
type Duplicate = CsvCleanupOutput["duplicates"][number];
type Difference = Duplicate["differences"][number];

/**
 * Cleans rows: a rectangular table over the union of columns, optional trimming, blank-row
 * removal, and first-occurrence deduplication on the key columns. No value is ever changed except
 * by trimming: numbers keep their lexeme (see ExactNumber), strings their case and form.
 * Pure: the same input always gives the same output.
 */
export function cleanupRows(input: CsvCleanupInput): CsvCleanupOutput {
  const columns = unionOfColumns(input.rows);
  const keyColumns = input.keyColumns ?? columns;
  // Case folding only where the caller named the key columns: an id such as dQw4w9WgXcQ is not
  // DQW4W9WGXCQ, and a whole-row comparison must not decide otherwise.
  const foldCase = input.keyColumns !== undefined && input.caseInsensitiveKeys;

  let trimmedValues = 0;
  let blankRowsDropped = 0;
  const rows: Row[] = [];
  const duplicates: CsvCleanupOutput["duplicates"] = [];
  const firstIndexByKey = new Map<string, number>();
  const keptByIndex = new Map<number, Row>();

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
    const key = rowKey(row, keyColumns, foldCase);
    const firstIndex = firstIndexByKey.get(key);
    if (firstIndex !== undefined) {
      const differences = differencesOf(row, keptByIndex.get(firstIndex) as Row, keyColumns);
      const match =
        differences.length === 0
          ? "exact"
          : differences.some((d) => d.kind === "case")
            ? "case-folded"
            : "normalized";
      duplicates.push({ index, duplicateOf: firstIndex, match, differences });
      return;
    }
    firstIndexByKey.set(key, index);
    keptByIndex.set(index, row);
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

const isNumber = (value: Cell): value is number | ExactNumber =>
  typeof value === "number" || value instanceof ExactNumber;

const fold = (text: string) => text.toUpperCase().toLowerCase();

/**
 * Key values keep their JSON type (the number 1 and the string "1" differ). Numbers compare by
 * exact decimal value (1 = 1.0, 9007199254740993 ≠ 9007199254740992); strings in Unicode NFC form,
 * and without regard to case when `foldCase` (an upper- then lower-case round trip, so "Straße"
 * and "STRASSE" match).
 */
function rowKey(row: Row, keyColumns: readonly string[], foldCase: boolean): string {
  return JSON.stringify(
    keyColumns.map((column) => {
      const value = row[column] as Cell;
      if (isNumber(value)) return `n:${decimalKey(value)}`;
      if (typeof value !== "string") return value;
      const normalized = value.normalize("NFC");
      return `s:${foldCase ? fold(normalized) : normalized}`;
    }),
  );
}

/** How a duplicate's compared values differ from the kept row's (they have the same key). */
function differencesOf(row: Row, kept: Row, keyColumns: readonly string[]): Difference[] {
  const differences: Difference[] = [];
  for (const column of keyColumns) {
    const value = row[column] as Cell;
    const keptValue = kept[column] as Cell;
    if (isNumber(value) && isNumber(keptValue)) {
      if (lexemeOf(value) !== lexemeOf(keptValue)) differences.push({ column, kind: "number-spelling" });
    } else if (typeof value === "string" && typeof keptValue === "string" && value !== keptValue) {
      const same = value.normalize("NFC") === keptValue.normalize("NFC");
      differences.push({ column, kind: same ? "unicode-form" : "case" });
    }
  }
  return differences;
}
