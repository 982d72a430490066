import fs from "node:fs";
import path from "node:path";

export interface BenchRow {
  [column: string]: string | number;
}

/** Times `fn` over `iterations` runs after a warm-up; returns milliseconds per run (median of 5 batches). */
export function timePerRun(
  fn: () => unknown,
  iterations: number,
  warmup = Math.max(1, Math.floor(iterations / 5)),
): number {
  for (let i = 0; i < warmup; i++) fn();
  const batches: number[] = [];
  for (let batch = 0; batch < 5; batch++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < iterations; i++) fn();
    batches.push(Number(process.hrtime.bigint() - start) / 1e6 / iterations);
  }
  batches.sort((a, b) => a - b);
  return batches[2] as number;
}

/** Prints a benchmark's table and writes bench/results/<name>.json (what the issue notes quote). */
export function report(name: string, rows: BenchRow[], notes: Record<string, unknown> = {}): void {
  console.log(`\n${name}`);
  console.table(rows);
  const file = path.join(path.dirname(new URL(import.meta.url).pathname), "results", `${name}.json`);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(
    file,
    `${JSON.stringify({ name, measuredAt: new Date().toISOString(), node: process.version, rows, ...notes }, null, 2)}\n`,
  );
}
