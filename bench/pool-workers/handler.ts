import { jsonDiff } from "../../src/operations/json-diff/json-diff.ts";
import { readJsonDiffRequest } from "../../src/operations/json-diff/read-request.ts";

/**
 * The one task handler every pool in bench/worker-pool.bench.ts runs, so the pools differ only in
 * how they hand tasks to it: a json-diff request body (the operation's worker work after payment),
 * `spin`, a task that never ends (the deadline's kill and replace), or `exit`, a worker that ends
 * itself in the middle of a task (a crash).
 */
export type BenchTask = { kind: "diff"; body: string } | { kind: "spin" } | { kind: "exit" };

export function handle(task: BenchTask): string {
  if (task.kind === "spin") for (;;);
  if (task.kind === "exit") process.exit(3);
  return JSON.stringify(jsonDiff(readJsonDiffRequest(task.body)));
}
