/**
 * `utility402 ingest clinical-trials --from api | --from dir PATH [--db PATH] [--restart] [--page-size N]
 * [--rule start-date|results-first-posted] [--allow-other-source]`.
 */
import type { Config } from "../../config.ts";
import { ConfigError } from "../../config.ts";
import { closeAfterWriting, openForWriting } from "./database.ts";
import {
  type ApiIngestProgress,
  DEFAULT_PAGE_SIZE,
  DEFAULT_SELECTION_RULE,
  formatProgress,
  ingestFromApi,
  ingestFromDirectory,
  isRegistryUrl,
  isSelectionRule,
  type RuleCounts,
  SELECTION_RULES,
  type SelectionRule,
  type SkippedRecord,
} from "./ingest.ts";

export const INGEST_USAGE = `ingest clinical-trials --from api | --from dir PATH [--db PATH] [--restart] [--page-size N]
                       [--rule start-date|results-first-posted] [--allow-other-source]
           build the clinical-trials database (default CLINICAL_TRIALS_DB) from the ClinicalTrials.gov
           API v2 (CLINICAL_TRIALS_API_URL; studies with results started on or after 2020-01-01, or with
           --rule results-first-posted those whose results were first posted on or after it; each rule's
           count is asked of the API first and reported; one request a second, resumable: run the same
           command again after an interruption) or from a folder of API v2 study records.
           --allow-other-source: CLINICAL_TRIALS_API_URL is not the registry, and a complete ingest
           from it may still be sold as the clinical snapshot product`;

export interface IngestArguments {
  from: { kind: "api" } | { kind: "dir"; path: string };
  db?: string;
  restart: boolean;
  pageSize: number;
  rule: SelectionRule;
  allowOtherSource: boolean;
}

export function parseIngestArguments(args: string[]): IngestArguments {
  const [dataset, ...rest] = args;
  if (dataset !== "clinical-trials") {
    throw new ConfigError([`ingest: unknown dataset "${dataset ?? ""}" (known: clinical-trials)`]);
  }
  let from: IngestArguments["from"] | undefined;
  let db: string | undefined;
  let restart = false;
  let pageSize = DEFAULT_PAGE_SIZE;
  let rule: SelectionRule = DEFAULT_SELECTION_RULE;
  let allowOtherSource = false;
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i];
    const value = () => {
      const next = rest[++i];
      if (next === undefined || next.startsWith("--"))
        throw new ConfigError([`ingest: ${arg} needs a value`]);
      return next;
    };
    if (arg === "--from") {
      const source = value();
      if (source === "api") from = { kind: "api" };
      else if (source === "dir") from = { kind: "dir", path: value() };
      else throw new ConfigError([`ingest: --from must be "api" or "dir PATH", got "${source}"`]);
    } else if (arg === "--db") {
      db = value();
    } else if (arg === "--restart") {
      restart = true;
    } else if (arg === "--allow-other-source") {
      allowOtherSource = true;
    } else if (arg === "--rule") {
      const name = value();
      if (!isSelectionRule(name)) {
        throw new ConfigError([
          `ingest: --rule must be one of ${Object.keys(SELECTION_RULES).join(", ")}, got "${name}"`,
        ]);
      }
      rule = name;
    } else if (arg === "--page-size") {
      pageSize = Number(value());
      if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > 1000) {
        throw new ConfigError(["ingest: --page-size must be an integer from 1 to 1000"]);
      }
    } else {
      throw new ConfigError([`ingest: unknown option "${arg}"`]);
    }
  }
  if (!from) throw new ConfigError(["ingest: --from api or --from dir PATH is required"]);
  return { from, db, restart, pageSize, rule, allowOtherSource };
}

/** One line per rule: "start-date (started on or after 2020-01-01): 38,638". */
export function formatRuleCounts(counts: RuleCounts): string {
  return (Object.keys(SELECTION_RULES) as SelectionRule[])
    .map(
      (rule) =>
        `  ${rule} (studies with results ${SELECTION_RULES[rule].describe}): ${counts[rule]?.toLocaleString("en-US") ?? "no count given"}\n`,
    )
    .join("");
}

function formatSkipped(skipped: readonly SkippedRecord[]): string {
  return skipped.map((record) => `  skipped ${record.where}: ${record.reason}\n`).join("");
}

export async function runIngest(
  config: Config,
  args: IngestArguments,
  stderr: NodeJS.WriteStream,
): Promise<void> {
  const file = args.db ?? config.clinicalTrials.dbPath;
  const db = openForWriting(file, {
    onRebuild: (version) =>
      stderr.write(
        `${file} was built by an older ingest (schema ${version}); it is emptied and rebuilt in the current layout\n`,
      ),
  });
  try {
    if (args.from.kind === "dir") {
      const result = ingestFromDirectory(db, args.from.path);
      const { meta } = result;
      stderr.write(
        `loaded ${result.written} studies from ${result.files} files` +
          (result.skippedWithoutResults ? ` (${result.skippedWithoutResults} without results skipped)` : "") +
          (result.skipped.length ? ` (${result.skipped.length} without an NCT number skipped)` : "") +
          ` into ${file}: ${meta.studies} studies, ${meta.endpoints} endpoints, ${meta.measurements} measurements, ` +
          `${meta.analyses} analyses (kind ${meta.kind}, snapshot ${meta.snapshotDate})\n` +
          formatSkipped(result.skipped),
      );
      return;
    }
    if (!isRegistryUrl(config.clinicalTrials.apiUrl)) {
      stderr.write(
        `note: ${config.clinicalTrials.apiUrl} is not the ClinicalTrials.gov registry; the database records it, and the ` +
          `clinical snapshot product is ${args.allowOtherSource ? "allowed (--allow-other-source)" : "refused (pass --allow-other-source to allow it)"}\n`,
      );
    }
    // On a terminal the line redraws in place; in a log, one line per page.
    const show = (progress: ApiIngestProgress) =>
      stderr.write(stderr.isTTY ? `\r${formatProgress(progress)}\u001b[K` : `${formatProgress(progress)}\n`);
    let shown = false;
    try {
      const result = await ingestFromApi(db, {
        apiUrl: config.clinicalTrials.apiUrl,
        pageSize: args.pageSize,
        restart: args.restart,
        rule: args.rule,
        allowOtherSource: args.allowOtherSource,
        onRuleCounts: (counts) =>
          stderr.write(
            `studies with results on ${config.clinicalTrials.apiUrl}, by selection rule:\n${formatRuleCounts(counts)}`,
          ),
        onProgress: (progress) => {
          if (!shown && progress.resumed) stderr.write(`resuming the unfinished ingest in ${file}\n`);
          shown = true;
          show(progress);
        },
      });
      if (shown && stderr.isTTY) stderr.write("\n");
      if (result.status === "already-complete") {
        stderr.write(`${file} already holds a complete ingest; pass --restart to fetch a new snapshot\n`);
      } else {
        const meta = result.meta;
        stderr.write(
          `complete: ${meta?.studies} studies, ${meta?.endpoints} endpoints, ${meta?.measurements} measurements, ` +
            `${meta?.analyses} analyses (snapshot ${meta?.snapshotDate}, rule ${args.rule}) in ${file}\n` +
            (result.skipped.length
              ? `${result.skipped.length} records without an NCT number skipped:\n${formatSkipped(result.skipped)}`
              : ""),
        );
      }
    } catch (error) {
      if (shown && stderr.isTTY) stderr.write("\n");
      stderr.write(
        "the ingest stopped; every page before the failure is saved: run the same command again to resume\n",
      );
      throw error;
    }
  } finally {
    closeAfterWriting(db);
  }
}
