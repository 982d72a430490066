/** `utility402 ingest clinical-trials --from api | --from dir PATH [--db PATH] [--restart] [--page-size N]`. */
import type { Config } from "../../config.ts";
import { ConfigError } from "../../config.ts";
import { closeAfterWriting, openForWriting } from "./database.ts";
import {
  type ApiIngestProgress,
  DEFAULT_PAGE_SIZE,
  formatProgress,
  ingestFromApi,
  ingestFromDirectory,
} from "./ingest.ts";

export const INGEST_USAGE = `ingest clinical-trials --from api | --from dir PATH [--db PATH] [--restart] [--page-size N]
           build the clinical-trials database (default CLINICAL_TRIALS_DB) from the ClinicalTrials.gov
           API v2 (CLINICAL_TRIALS_API_URL; studies with results started on or after 2020-01-01, one
           request a second, resumable: run the same command again after an interruption) or from a
           folder of API v2 study records`;

export interface IngestArguments {
  from: { kind: "api" } | { kind: "dir"; path: string };
  db?: string;
  restart: boolean;
  pageSize: number;
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
  return { from, db, restart, pageSize };
}

export async function runIngest(
  config: Config,
  args: IngestArguments,
  stderr: NodeJS.WriteStream,
): Promise<void> {
  const file = args.db ?? config.clinicalTrialsDb;
  const db = openForWriting(file);
  try {
    if (args.from.kind === "dir") {
      const result = ingestFromDirectory(db, args.from.path);
      const { meta } = result;
      stderr.write(
        `loaded ${result.written} studies from ${result.files} files` +
          (result.skippedWithoutResults ? ` (${result.skippedWithoutResults} without results skipped)` : "") +
          ` into ${file}: ${meta.studies} studies, ${meta.endpoints} endpoints, ${meta.measurements} measurements, ` +
          `${meta.analyses} analyses (kind ${meta.kind}, snapshot ${meta.snapshotDate})\n`,
      );
      return;
    }
    // On a terminal the line redraws in place; in a log, one line per page.
    const show = (progress: ApiIngestProgress) =>
      stderr.write(stderr.isTTY ? `\r${formatProgress(progress)}\u001b[K` : `${formatProgress(progress)}\n`);
    let shown = false;
    try {
      const result = await ingestFromApi(db, {
        apiUrl: config.clinicalTrialsApiUrl,
        pageSize: args.pageSize,
        restart: args.restart,
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
            `${meta?.analyses} analyses (snapshot ${meta?.snapshotDate}) in ${file}\n`,
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
