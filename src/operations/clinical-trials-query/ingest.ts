/**
 * `utility402 ingest clinical-trials`: builds the database from a folder of API v2 study records
 * or from the ClinicalTrials.gov API v2 itself, page by page, resumable.
 */
import fs from "node:fs";
import path from "node:path";
import { retry } from "../retry.ts";
import {
  type DatasetMeta,
  type ProvenanceMeta,
  type SnapshotDateBasis,
  StudyWriter,
  snapshotDateOf,
  type TrialsDatabase,
  writeMeta,
} from "./database.ts";
import { normalizeNctId, type StudyRecord } from "./summary.ts";

/** The service's subject: studies with posted results from this day on (by the selection rule's date). */
export const STARTED_ON_OR_AFTER = "2020-01-01";
export const SELECTION_FROM = STARTED_ON_OR_AFTER;

/**
 * Which studies with results a full ingest asks the registry for: those that started on or after
 * 2020-01-01 (`start-date`, the default), or those whose results were first posted on or after it
 * (`results-first-posted`). docs/clinical-trials.md says which matches the published figures.
 */
export const SELECTION_RULES = {
  "start-date": {
    filter: `AREA[StartDate]RANGE[${SELECTION_FROM},MAX]`,
    column: "start_day",
    describe: `started on or after ${SELECTION_FROM}`,
  },
  "results-first-posted": {
    filter: `AREA[ResultsFirstPostDate]RANGE[${SELECTION_FROM},MAX]`,
    column: "results_first_posted",
    describe: `first posted on or after ${SELECTION_FROM}`,
  },
} as const;
export type SelectionRule = keyof typeof SELECTION_RULES;
export const DEFAULT_SELECTION_RULE: SelectionRule = "start-date";
export const isSelectionRule = (value: string): value is SelectionRule =>
  Object.hasOwn(SELECTION_RULES, value);

/** The registry itself (https, clinicaltrials.gov): the only source a full snapshot is sold from by default. */
export function isRegistryUrl(apiUrl: string): boolean {
  try {
    const url = new URL(apiUrl);
    return url.protocol === "https:" && /^(www\.)?clinicaltrials\.gov$/i.test(url.hostname);
  } catch {
    return false;
  }
}

/** A record the ingest could not store (no NCT number): skipped, and reported by where it was. */
export interface SkippedRecord {
  where: string;
  reason: string;
}

function withoutNctId(study: unknown): string | null {
  if (!study || typeof study !== "object") return "not a JSON object";
  const nctId = (study as StudyRecord).protocolSection?.identificationModule?.nctId;
  return normalizeNctId(nctId)
    ? null
    : `protocolSection.identificationModule.nctId is ${JSON.stringify(nctId ?? null)}, not an NCT number`;
}
export const DEFAULT_PAGE_SIZE = 1000;
/** About one request a second, as the registry asks of bulk clients. */
export const DEFAULT_REQUEST_INTERVAL_MS = 1000;

const isoDay = (date: Date) => date.toISOString().slice(0, 10);

const hasResults = (study: StudyRecord) => study.resultsSection !== undefined;

export interface DirectoryIngestResult {
  files: number;
  written: number;
  skippedWithoutResults: number;
  /** Records without an NCT number: skipped, the rest of the folder is loaded. */
  skipped: SkippedRecord[];
  meta: DatasetMeta;
}

/**
 * Loads every *.json file of `dir` (a single study, or a page `{ "studies": [...] }` as the API
 * answers) in name order. Studies without a results section are skipped: the index is of results.
 */
export function ingestFromDirectory(
  db: TrialsDatabase,
  dir: string,
  options: { now?: () => Date } = {},
): DirectoryIngestResult {
  const files = fs
    .readdirSync(dir)
    .filter((name) => name.endsWith(".json"))
    .sort();
  if (files.length === 0) throw new Error(`no .json study records in ${dir}`);
  const writer = new StudyWriter(db);
  let written = 0;
  let skippedWithoutResults = 0;
  const skipped: SkippedRecord[] = [];
  db.transaction(() => {
    for (const file of files) {
      const parsed = JSON.parse(fs.readFileSync(path.join(dir, file), "utf8")) as
        | StudyRecord
        | { studies: StudyRecord[] };
      const page = parsed !== null && typeof parsed === "object" && "studies" in parsed;
      const studies = page && Array.isArray(parsed.studies) ? parsed.studies : [parsed as StudyRecord];
      for (const [index, study] of studies.entries()) {
        const problem = withoutNctId(study);
        if (problem) {
          skipped.push({ where: page ? `${file} /studies/${index}` : file, reason: problem });
          continue;
        }
        if (!hasResults(study)) {
          skippedWithoutResults++;
          continue;
        }
        writer.write(study);
        written++;
      }
    }
    // The records are now mixed with whatever an unfinished API run left: that run can no longer complete as "full".
    db.prepare("DELETE FROM ingest_state").run();
  })();
  const dated = snapshotDateOf(db) ?? {
    date: isoDay((options.now ?? (() => new Date()))()),
    basis: "ingest-clock" as const,
  };
  const meta = writeMeta(
    db,
    {
      kind: "sample",
      snapshotDate: dated.date,
      snapshotDateBasis: dated.basis,
      source: `folder of ClinicalTrials.gov API v2 study records (${path.basename(path.resolve(dir))})`,
    },
    {
      source_url: "",
      source_is_registry: "no",
      other_source_allowed: "no",
      selection_rule: "",
      rule_counts: "",
      skipped_records: String(skipped.length),
    },
  );
  return { files: files.length, written, skippedWithoutResults, skipped, meta };
}

export interface ApiIngestProgress {
  page: number;
  studiesReceived: number;
  totalCount: number | null;
  endpoints: number;
  measurements: number;
  analyses: number;
  /** Estimated from this run's pace; null until a page has arrived. */
  etaMs: number | null;
  resumed: boolean;
}

export interface ApiIngestOptions {
  apiUrl: string;
  /** Which studies to ask for (default start-date); a resumed run keeps the rule it started with. */
  rule?: SelectionRule;
  /**
   * The operator's explicit word that a complete ingest from an `apiUrl` other than the registry
   * may be sold as the clinical snapshot product (recorded in meta; without it the product refuses).
   */
  allowOtherSource?: boolean;
  pageSize?: number;
  /** Least time between the starts of two requests. */
  intervalMs?: number;
  /** Retries of a failed page (network error, 429, 5xx) before the run stops, resumable. */
  retries?: number;
  retryDelayMs?: number;
  /** Discard an unfinished or finished run and start again from the first page. */
  restart?: boolean;
  now?: () => Date;
  fetch?: typeof fetch;
  sleep?: (ms: number) => Promise<void>;
  onProgress?: (progress: ApiIngestProgress) => void;
  /** Each selection rule's count, when a fresh run has asked the API for them. */
  onRuleCounts?: (counts: RuleCounts) => void;
}

export interface ApiIngestResult {
  status: "complete" | "already-complete";
  pagesThisRun: number;
  resumed: boolean;
  meta: DatasetMeta | null;
  /** Each selection rule's count, asked of the API when the run started. */
  ruleCounts: RuleCounts | null;
  skipped: SkippedRecord[];
}

/** How many studies with results each selection rule names, as the API counted them (null: no count given). */
export type RuleCounts = Record<SelectionRule, number | null>;

interface RunState {
  source: string;
  startedAt: string;
  status: "running" | "complete";
  nextPageToken: string | null;
  pages: number;
  studiesReceived: number;
  totalCount: number | null;
  rule?: SelectionRule;
  ruleCounts?: RuleCounts | null;
  skipped?: SkippedRecord[];
}

const STATE_KEY = "api";

function readState(db: TrialsDatabase): RunState | null {
  const row = db.prepare("SELECT value FROM ingest_state WHERE key = ?").get(STATE_KEY) as
    | { value: string }
    | undefined;
  return row ? (JSON.parse(row.value) as RunState) : null;
}

function saveState(db: TrialsDatabase, state: RunState): void {
  db.prepare(
    "INSERT INTO ingest_state (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
  ).run(STATE_KEY, JSON.stringify(state));
}

export class UpstreamError extends Error {
  constructor(
    message: string,
    /** A network error, 429 or 5xx: worth another try; a 4xx means the request itself is wrong. */
    readonly retryable: boolean,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** The request for one page: studies with results, selected by the rule (default: started on or after 2020-01-01). */
export function pageUrl(
  apiUrl: string,
  pageSize: number,
  pageToken: string | null,
  rule: SelectionRule = DEFAULT_SELECTION_RULE,
): URL {
  const url = new URL(apiUrl);
  url.searchParams.set("format", "json");
  url.searchParams.set("aggFilters", "results:with");
  url.searchParams.set("filter.advanced", SELECTION_RULES[rule].filter);
  url.searchParams.set("pageSize", String(pageSize));
  if (pageToken) url.searchParams.set("pageToken", pageToken);
  else url.searchParams.set("countTotal", "true");
  return url;
}

/** The request that only counts a rule's studies: one NCT number on the page, and the total. */
export function countUrl(apiUrl: string, rule: SelectionRule): URL {
  const url = new URL(apiUrl);
  url.searchParams.set("format", "json");
  url.searchParams.set("aggFilters", "results:with");
  url.searchParams.set("filter.advanced", SELECTION_RULES[rule].filter);
  url.searchParams.set("fields", "NCTId");
  url.searchParams.set("pageSize", "1");
  url.searchParams.set("countTotal", "true");
  return url;
}

/**
 * Asks the API how many studies with results each selection rule names (`countTotal`), so an
 * ingest records which rule gives which figure on the day it ran.
 */
export async function countSelectionRules(
  options: Pick<ApiIngestOptions, "apiUrl" | "fetch" | "retries" | "retryDelayMs" | "sleep" | "intervalMs">,
): Promise<RuleCounts> {
  const fetchPage = options.fetch ?? fetch;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const counts = {} as RuleCounts;
  for (const [index, rule] of (Object.keys(SELECTION_RULES) as SelectionRule[]).entries()) {
    // Paced like the pages: one request per interval.
    if (index > 0) await sleep(options.intervalMs ?? DEFAULT_REQUEST_INTERVAL_MS);
    const page = await withRetries(options.retries ?? 3, options.retryDelayMs ?? 5000, sleep, () =>
      getPage(fetchPage, countUrl(options.apiUrl, rule)),
    );
    counts[rule] = typeof page.totalCount === "number" ? page.totalCount : null;
  }
  return counts;
}

/** Where an API ingest came from, as meta records it (the product and the service's descriptions read it). */
/**
 * An API ingest's date: the oldest registry copy among its records (a record's copy may be a day or
 * more older than the run's start: the registry's weekend, a run started early in the UTC day, a
 * resumed run), and the start day for records that state none. The start is kept apart
 * (meta.ingest_started_at).
 */
export function apiSnapshotDate(
  db: TrialsDatabase,
  startDay: string,
): { snapshotDate: string; snapshotDateBasis: SnapshotDateBasis } {
  const dated = snapshotDateOf(db, startDay) ?? { date: startDay, basis: "ingest-start" as const };
  return { snapshotDate: dated.date, snapshotDateBasis: dated.basis };
}

function apiProvenance(options: ApiIngestOptions, run: RunState): ProvenanceMeta {
  return {
    ingest_started_at: run.startedAt,
    source_url: options.apiUrl,
    source_is_registry: isRegistryUrl(options.apiUrl) ? "yes" : "no",
    other_source_allowed: options.allowOtherSource ? "yes" : "no",
    selection_rule: run.rule ?? DEFAULT_SELECTION_RULE,
    rule_counts: run.ruleCounts ? JSON.stringify(run.ruleCounts) : "",
    skipped_records: String(run.skipped?.length ?? 0),
  };
}

/**
 * Fetches every page into `db`. Each page's studies and the token of the next page are committed
 * in one transaction, so a run stopped at any point (a failed request, Ctrl-C, a crash) resumes
 * from the first page it had not committed; a study seen twice is stored once.
 */
export async function ingestFromApi(db: TrialsDatabase, options: ApiIngestOptions): Promise<ApiIngestResult> {
  const pageSize = options.pageSize ?? DEFAULT_PAGE_SIZE;
  const intervalMs = options.intervalMs ?? DEFAULT_REQUEST_INTERVAL_MS;
  const retries = options.retries ?? 3;
  const retryDelayMs = options.retryDelayMs ?? 5000;
  const now = options.now ?? (() => new Date());
  const fetchPage = options.fetch ?? fetch;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const rule = options.rule ?? DEFAULT_SELECTION_RULE;
  const registry = isRegistryUrl(options.apiUrl);
  const source =
    `${registry ? "ClinicalTrials.gov API v2" : "an API v2 stand-in, not the ClinicalTrials.gov registry:"} ` +
    `${options.apiUrl} (studies with results ${SELECTION_RULES[rule].describe})`;

  let state = readState(db);
  let countedAt = Number.NEGATIVE_INFINITY;
  if (state && !options.restart && state.source !== source) {
    throw new Error(
      `the database holds an unfinished ingest from another source (${state.source}); pass --restart to start over`,
    );
  }
  if (state?.status === "complete" && !options.restart) {
    return {
      status: "already-complete",
      pagesThisRun: 0,
      resumed: false,
      meta: null,
      ruleCounts: state.ruleCounts ?? null,
      skipped: state.skipped ?? [],
    };
  }
  const resumed = state !== null && !options.restart;
  if (!state || options.restart) {
    // Each rule's count from the API on the day the run starts: the figure each rule gives.
    const ruleCounts = await countSelectionRules({
      ...options,
      sleep,
      fetch: fetchPage,
      retries,
      retryDelayMs,
      intervalMs,
    });
    countedAt = Date.now();
    options.onRuleCounts?.(ruleCounts);
    // A full snapshot holds only what this run fetches: earlier rows (a sample, an older run) go.
    db.transaction(() => {
      db.prepare("DELETE FROM studies_fts").run();
      db.prepare("DELETE FROM studies").run();
      state = {
        source,
        startedAt: now().toISOString(),
        status: "running",
        nextPageToken: null,
        pages: 0,
        studiesReceived: 0,
        totalCount: null,
        rule,
        ruleCounts,
        skipped: [],
      };
      saveState(db, state);
    })();
  }
  let run = state as RunState;
  const writer = new StudyWriter(db);
  const startDay = run.startedAt.slice(0, 10);
  const runStart = Date.now();
  const receivedAtRunStart = run.studiesReceived;
  let pagesThisRun = 0;
  let lastRequestAt = countedAt;

  const paced = async <T>(request: () => Promise<T>) => {
    const wait = lastRequestAt + intervalMs - Date.now();
    if (wait > 0) await sleep(wait);
    lastRequestAt = Date.now();
    return request();
  };

  for (;;) {
    const url = pageUrl(options.apiUrl, pageSize, run.nextPageToken, run.rule ?? DEFAULT_SELECTION_RULE);
    const page = await withRetries(retries, retryDelayMs, sleep, () => paced(() => getPage(fetchPage, url)));
    const skippedHere: SkippedRecord[] = [];
    const studies = page.studies.filter((study, index) => {
      const problem = withoutNctId(study);
      if (problem) skippedHere.push({ where: `page ${run.pages + 1} /studies/${index}`, reason: problem });
      return !problem && hasResults(study);
    });
    const next: RunState = {
      ...run,
      skipped: [...(run.skipped ?? []), ...skippedHere],
      pages: run.pages + 1,
      studiesReceived: run.studiesReceived + page.studies.length,
      totalCount: page.totalCount ?? run.totalCount,
      nextPageToken: page.nextPageToken ?? null,
      status: page.nextPageToken ? "running" : "complete",
    };
    db.transaction(() => {
      for (const study of studies) writer.write(study);
      saveState(db, next);
    })();
    run = next;
    pagesThisRun++;
    const meta = writeMeta(
      db,
      {
        kind: run.status === "complete" ? "full" : "sample",
        ...apiSnapshotDate(db, startDay),
        source: run.status === "complete" ? source : `${source}; unfinished: ${run.pages} pages so far`,
      },
      apiProvenance(options, run),
    );
    if (options.onProgress) {
      const receivedThisRun = run.studiesReceived - receivedAtRunStart;
      const elapsed = Date.now() - runStart;
      options.onProgress({
        page: run.pages,
        studiesReceived: run.studiesReceived,
        totalCount: run.totalCount,
        endpoints: meta.endpoints,
        measurements: meta.measurements,
        analyses: meta.analyses,
        etaMs:
          run.status === "complete"
            ? 0
            : run.totalCount !== null && receivedThisRun > 0
              ? Math.max(0, ((run.totalCount - run.studiesReceived) * elapsed) / receivedThisRun)
              : null,
        resumed,
      });
    }
    if (run.status === "complete") {
      return {
        status: "complete",
        pagesThisRun,
        resumed,
        meta,
        ruleCounts: run.ruleCounts ?? null,
        skipped: run.skipped ?? [],
      };
    }
  }
}

interface Page {
  studies: StudyRecord[];
  nextPageToken?: string;
  totalCount?: number;
}

async function getPage(fetchPage: typeof fetch, url: URL): Promise<Page> {
  let response: Response;
  try {
    response = await fetchPage(url, { headers: { accept: "application/json" } });
  } catch (error) {
    throw new UpstreamError(`${url.origin}: ${(error as Error).message}`, true, { cause: error });
  }
  if (!response.ok) {
    await response.body?.cancel();
    throw new UpstreamError(
      `${url.origin} answered ${response.status} ${response.statusText}`,
      response.status === 429 || response.status >= 500,
    );
  }
  const body = (await response.json()) as Page;
  if (!body || !Array.isArray(body.studies))
    throw new UpstreamError(`${url.origin}: the page has no studies array`, false);
  return body;
}

/** Tries `attempt` once and `retries` more times on a retryable UpstreamError, waiting delayMs, then twice that, … between. */
function withRetries<T>(
  retries: number,
  delayMs: number,
  sleep: (ms: number) => Promise<void>,
  attempt: () => Promise<T>,
): Promise<T> {
  return retry(attempt, {
    attempts: retries + 1,
    baseMs: delayMs,
    retryOn: (error) => error instanceof UpstreamError && error.retryable,
    sleep,
  });
}

const thousands = (n: number) => n.toLocaleString("en-US");

function duration(ms: number): string {
  const seconds = Math.round(ms / 1000);
  if (seconds < 60) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes}m ${String(seconds % 60).padStart(2, "0")}s`;
  return `${Math.floor(minutes / 60)}h ${String(minutes % 60).padStart(2, "0")}m`;
}

/** One line: a bar, the counts and the ETA. */
export function formatProgress(progress: ApiIngestProgress, width = 24): string {
  const { totalCount, studiesReceived } = progress;
  const fraction = totalCount ? Math.min(1, studiesReceived / totalCount) : 0;
  const filled = Math.round(fraction * width);
  const bar = totalCount ? `[${"#".repeat(filled)}${".".repeat(width - filled)}] ` : "";
  const of = totalCount ? `/${thousands(totalCount)} (${(fraction * 100).toFixed(1)}%)` : "";
  const eta =
    progress.etaMs === null ? "ETA …" : progress.etaMs === 0 ? "done" : `ETA ${duration(progress.etaMs)}`;
  return (
    `${bar}page ${progress.page}: ${thousands(studiesReceived)}${of} studies, ` +
    `${thousands(progress.endpoints)} endpoints, ${thousands(progress.measurements)} measurements, ` +
    `${thousands(progress.analyses)} analyses, ${eta}`
  );
}
