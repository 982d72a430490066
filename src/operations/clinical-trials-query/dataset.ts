/**
 * What the loaded database is, in the words every description of the operation uses: the 402
 * terms, /openapi.json, /catalog.json, /.well-known/x402, and the `dataset` of every response.
 * Computed from the database when the service starts, never written by hand.
 */
import {
  countTotals,
  readMeta,
  recordsAsOf,
  type SnapshotDateBasis,
  type TrialsDatabase,
  undatedRecords,
} from "./database.ts";
import { SELECTION_RULES } from "./ingest.ts";
import type { Dataset } from "./schema.ts";

const thousands = (n: number) => n.toLocaleString("en-US");

export function readDataset(db: TrialsDatabase): Dataset {
  const meta = readMeta(db);
  const kind = meta.kind === "full" ? "full" : "sample";
  const rule =
    meta.selection_rule === "results-first-posted" || meta.selection_rule === "start-date"
      ? meta.selection_rule
      : null;
  let ruleCounts: Record<string, number | null> | null = null;
  try {
    ruleCounts = meta.rule_counts ? (JSON.parse(meta.rule_counts) as Record<string, number | null>) : null;
  } catch {
    ruleCounts = null;
  }
  const basis: SnapshotDateBasis = isSnapshotDateBasis(meta.snapshot_date_basis)
    ? meta.snapshot_date_basis
    : meta.source_url
      ? "ingest-start"
      : "last-update-posted";
  const copies = recordsAsOf(db);
  const partial: Omit<Dataset, "description"> = {
    kind,
    sample: kind !== "full",
    snapshotDate: meta.snapshot_date ?? "1970-01-01",
    snapshotDateBasis: basis,
    snapshotDateMeaning: snapshotDateMeaning(basis, copies),
    recordsAsOf: copies,
    ...countTotals(db),
    source: meta.source ?? "unknown",
    sourceUrl: meta.source_url ? meta.source_url : null,
    registry: meta.source_is_registry === "yes",
    selectionRule: rule,
    ruleCounts,
    skippedRecords: Number(meta.skipped_records ?? 0) || 0,
  };
  return { ...partial, description: describeDataset(partial, undatedRecords(db)) };
}

const BASES: readonly SnapshotDateBasis[] = [
  "record-as-of",
  "last-update-posted",
  "ingest-start",
  "ingest-clock",
];
const isSnapshotDateBasis = (value: string | undefined): value is SnapshotDateBasis =>
  BASES.includes(value as SnapshotDateBasis);

/** What `snapshotDate` means for this database, in one sentence. */
function snapshotDateMeaning(
  basis: SnapshotDateBasis,
  copies: { oldest: string; newest: string } | null,
): string {
  const each =
    "each study's recordVersion.asOf is the day of the registry's data its copy reflects" +
    (copies ? ` (here ${copies.oldest} to ${copies.newest})` : "");
  switch (basis) {
    case "record-as-of":
      return `the oldest registry copy among the loaded records (ClinicalTrials.gov versionHolder): every record is at least this current; ${each}`;
    case "last-update-posted":
      return `the oldest last update posted among the loaded records that state no registry copy date, older than every copy date: every record is at least this current${copies ? `; ${each}` : ""}`;
    case "ingest-start":
      return `the day the API ingest started reading the registry, which bounds the records that state no registry copy date; no record states an older copy${copies ? `; ${each}` : ""}`;
    case "ingest-clock":
      return "the day the records were loaded: they state neither a registry copy date nor a last update";
  }
}

/**
 * "as of 2023-11-15 (registry copies of 2023-11-15 to 2024-06-10)": the date every record is at least
 * as current as, the copies' range, and how many records state no copy date.
 */
function asOf(dataset: Omit<Dataset, "description">, undated: number): string {
  const copies = dataset.recordsAsOf;
  const studies = (n: number) => `${thousands(n)} ${n === 1 ? "study states" : "studies state"}`;
  if (!copies) return `as of ${dataset.snapshotDate} (no study states its registry copy date)`;
  const range = copies.oldest === copies.newest ? copies.newest : `${copies.oldest} to ${copies.newest}`;
  const missing = undated > 0 ? `; ${studies(undated)} no copy date` : "";
  return `as of ${dataset.snapshotDate} (registry copies of ${range}${missing})`;
}

/** "the sample of 5 studies (…)", or "38,638 studies … from ClinicalTrials.gov, as of …". */
export function describeDataset(dataset: Omit<Dataset, "description">, undated: number): string {
  const size = `${thousands(dataset.studies)} ${dataset.studies === 1 ? "study" : "studies"}`;
  const counts = `${thousands(dataset.endpoints)} endpoints, ${thousands(dataset.measurements)} measurements, ${thousands(dataset.analyses)} analyses`;
  if (dataset.kind === "sample") {
    const what = dataset.sourceUrl
      ? `an unfinished ingest from ${dataset.sourceUrl}`
      : "a sample loaded from a folder of study records, not the full index";
    return `a sample of ${size} (${counts}; ${what}), ${asOf(dataset, undated)}`;
  }
  const selected = dataset.selectionRule
    ? ` with results ${SELECTION_RULES[dataset.selectionRule].describe}`
    : "";
  const from = dataset.registry
    ? "ClinicalTrials.gov"
    : `${dataset.sourceUrl ?? "an unknown source"} (not the ClinicalTrials.gov registry)`;
  return `${size}${selected} (${counts}), a complete ingest of ${from} ${asOf(dataset, undated)}`;
}

/** The operation's summary and description for the loaded database. */
export function describeOperation(dataset: Dataset): { summary: string; description: string } {
  return {
    summary: `Query trial-level clinical results summaries: ${dataset.description}`,
    description:
      `Loaded now: ${dataset.description}. ` +
      "Full-text search (SQLite FTS5, BM25-ranked) and filters (NCT number, condition, intervention, phase, " +
      "sponsor, start and completion dates, minimum enrollment) over trial-level results summaries of " +
      "ClinicalTrials.gov studies with results: endpoint, measurement and analysis counts (counted as AACT " +
      "does), primary outcomes (secondary and other outcomes with `includeSecondary`) with the number " +
      "analysed per group, measurements and their comments, units and analyses (estimate, dispersion, " +
      'confidence interval and its sides, p-values parsed from text such as "<0.001", raw text kept), ' +
      "adverse-event totals per group and the registry link. Pages of up to 50 with an opaque `nextCursor`. " +
      "Every item carries its record's version (the registry's copy date and last update); every response the dataset's " +
      "kind, totals, source and snapshot date (what the date means is stated), counted from the loaded database.",
  };
}
