/**
 * The TED expert query for a shortlist request (TED Search API v3 syntax: `FT~"…"`, `field IN (a b)`,
 * `field=prefix*`, dates as YYYYMMDD, `SORT BY`). Every value an agent sends is either checked against a
 * closed format (country codes, CPV codes, dates) or quoted as a phrase with the characters that could end
 * the phrase or widen it removed, so no input can add an operator, a field or a wildcard to the query.
 */

/** 8 digits with an optional check digit, or a prefix of 2 to 7 digits (an optional trailing `*`). */
export const cpvPattern = /^(?:\d{8}(?:-\d)?|\d{2,7}\*?)$/;

/**
 * Notice types that invite tenders or requests to participate (eForms `notice-type` codes): contract
 * notices, design contests, prior information notices used as a call for competition, qualification
 * systems and subcontracting notices. Everything else (planning, market consultation, award, direct award,
 * modification, completion) is not a competition an agent can enter.
 */
export const COMPETITION_NOTICE_TYPES = [
  "cn-standard",
  "cn-social",
  "cn-desg",
  "pin-cfc-standard",
  "pin-cfc-social",
  "qu-sy",
  "subco",
] as const;

/** What a full-text phrase keeps of a term: no quote, backslash or wildcard, whitespace collapsed. */
export function searchableText(term: string): string {
  return term
    .replace(/["\\*?]/g, " ")
    .replace(/\s+/g, " ")
    .trim();
}

const phrase = (term: string) => `FT~"${searchableText(term)}"`;

/** "2026-11-04" → 20261104, the form TED compares dates in. */
const tedDate = (isoDate: string) => isoDate.replaceAll("-", "");

export interface QueryInput {
  query?: string;
  keywords?: string[];
  countries?: string[];
  cpvCodes?: string[];
  publishedAfter?: string;
  publishedBefore?: string;
  deadlineAfter?: string;
  deadlineBefore?: string;
}

/** The deadline days a deadline bound applies to: tenders and requests to participate. */
const DEADLINE_DATE_FIELDS = [
  "deadline-receipt-tender-date-lot",
  "deadline-receipt-request-date-lot",
] as const;

const unique = (values: readonly string[]) => [...new Set(values)];

/** Exact codes lose their check digit (TED indexes the 8 digits); prefixes lose their `*`. */
export function splitCpvCodes(codes: readonly string[]): { exact: string[]; prefixes: string[] } {
  const exact: string[] = [];
  const prefixes: string[] = [];
  for (const code of codes) {
    const digits = code.replace(/-\d$/, "").replace(/\*$/, "");
    (digits.length === 8 ? exact : prefixes).push(digits);
  }
  return { exact: unique(exact), prefixes: unique(prefixes) };
}

export function buildExpertQuery(input: QueryInput): string {
  const clauses: string[] = [];
  if (input.query) clauses.push(phrase(input.query));
  if (input.keywords?.length) {
    const terms = unique(input.keywords.map(searchableText)).map((term) => `FT~"${term}"`);
    clauses.push(terms.length === 1 ? (terms[0] as string) : `(${terms.join(" OR ")})`);
  }
  if (input.countries?.length) clauses.push(`buyer-country IN (${unique(input.countries).join(" ")})`);
  if (input.cpvCodes?.length) {
    const { exact, prefixes } = splitCpvCodes(input.cpvCodes);
    const parts = [
      ...(exact.length ? [`classification-cpv IN (${exact.join(" ")})`] : []),
      ...prefixes.map((prefix) => `classification-cpv=${prefix}*`),
    ];
    clauses.push(parts.length === 1 ? (parts[0] as string) : `(${parts.join(" OR ")})`);
  }
  if (input.publishedAfter) clauses.push(`publication-date>=${tedDate(input.publishedAfter)}`);
  if (input.publishedBefore) clauses.push(`publication-date<=${tedDate(input.publishedBefore)}`);
  const deadlineBounds = (field: string) =>
    [
      ...(input.deadlineAfter ? [`${field}>=${tedDate(input.deadlineAfter)}`] : []),
      ...(input.deadlineBefore ? [`${field}<=${tedDate(input.deadlineBefore)}`] : []),
    ].join(" AND ");
  if (input.deadlineAfter || input.deadlineBefore) {
    // A restricted procedure publishes only its request-to-participate deadline; either kind in range counts.
    const [tender, request] = DEADLINE_DATE_FIELDS.map(deadlineBounds);
    const both = !!(input.deadlineAfter && input.deadlineBefore);
    clauses.push(both ? `((${tender}) OR (${request}))` : `(${tender} OR ${request})`);
  }
  clauses.push(`notice-type IN (${COMPETITION_NOTICE_TYPES.join(" ")})`);
  return `${clauses.join(" AND ")} SORT BY publication-date DESC`;
}
