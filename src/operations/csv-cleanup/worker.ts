import type { RequestBody } from "../../contract/operation.ts";
import { serveWorker } from "../worker-pool.ts";
import { readCsvCleanupRequest, requestDigest, runCleanup } from "./read-request.ts";

/** Work a csv-cleanup worker does on a large body: check it (before payment) or clean it (after). */
export interface CsvCleanupTask {
  kind: "check" | "run";
  body: RequestBody;
  contentType: string | undefined;
  query: Record<string, string[]>;
}
export type CsvCleanupTaskResult = { digest: string } | { bodyText: string };

await serveWorker<CsvCleanupTask, CsvCleanupTaskResult>((task) => {
  const input = readCsvCleanupRequest(task.body, task.contentType, task.query);
  if (task.kind === "check") return { digest: requestDigest(input) };
  return { bodyText: runCleanup(input).bodyText };
});
