/**
 * Keyset pagination: a cursor names the last row of a page by its sort key and its NCT number
 * (unique), so the next page starts right after it even where many rows share the sort key, and
 * rows added or removed elsewhere shift nothing. It also carries a fingerprint of the filters: a
 * cursor replayed with other filters would silently skip or repeat rows, so that is a 400.
 */
import { createHash } from "node:crypto";

export interface Cursor {
  /** Fingerprint of the filters of the first page. */
  filters: string;
  /** The last row's sort key: its BM25 score (text queries) or its start day (newest first). */
  key: number | string;
  nctId: string;
}

/** The words of free text as the full-text index tokenizes them (letters and digits). */
export function searchTerms(text: string): string[] {
  return text.match(/[\p{L}\p{N}]+/gu) ?? [];
}

const FILTER_FIELDS = [
  "query",
  "nctId",
  "condition",
  "intervention",
  "phase",
  "sponsor",
  "startedAfter",
  "completedBefore",
  "minEnrollment",
] as const;

export function cursorFingerprint(filters: Partial<Record<(typeof FILTER_FIELDS)[number], unknown>>): string {
  const values = FILTER_FIELDS.map((field) => filters[field] ?? null);
  return createHash("sha256").update(JSON.stringify(values)).digest("base64url").slice(0, 16);
}

export function encodeCursor(cursor: Cursor): string {
  return Buffer.from(JSON.stringify([1, cursor.filters, cursor.key, cursor.nctId])).toString("base64url");
}

/** Null for anything that is not a cursor this service issued for this kind of ordering. */
export function decodeCursor(text: string, ranked: boolean): Cursor | null {
  if (!/^[A-Za-z0-9_-]+$/.test(text)) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(text, "base64url").toString("utf8"));
  } catch {
    return null;
  }
  if (!Array.isArray(parsed) || parsed.length !== 4 || parsed[0] !== 1) return null;
  const [, filters, key, nctId] = parsed as unknown[];
  if (typeof filters !== "string" || typeof nctId !== "string" || !/^NCT\d{8}$/.test(nctId)) return null;
  const keyFits = ranked
    ? typeof key === "number" && Number.isFinite(key)
    : typeof key === "string" && /^(\d{4}-\d{2}-\d{2})?$/.test(key);
  return keyFits ? { filters, key: key as number | string, nctId } : null;
}
