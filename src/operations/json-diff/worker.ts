import type { RequestBody } from "../../contract/operation.ts";
import { serveWorker } from "../worker-pool.ts";
import { jsonDiff } from "./json-diff.ts";
import { readJsonDiffRequest, requestDigest } from "./read-request.ts";

/** Work a json-diff worker does on a large body: check it (before payment) or diff it (after). */
export type JsonDiffTask = { kind: "check" | "diff"; body: RequestBody };
export type JsonDiffTaskResult = { digest: string } | { bodyText: string };

await serveWorker<JsonDiffTask, JsonDiffTaskResult>((task) => {
  const input = readJsonDiffRequest(task.body);
  if (task.kind === "check") return { digest: requestDigest(input) };
  return { bodyText: JSON.stringify(jsonDiff(input)) };
});
