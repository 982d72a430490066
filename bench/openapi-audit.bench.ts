/**
 * openapi-audit: audits per second on a ~100 KB contract, against calling Redocly's lint directly
 * in the same run. Run: npx tsx bench/openapi-audit.bench.ts (writes bench/results/openapi-audit.json).
 */
import os from "node:os";
import { BaseResolver, createConfig, lintDocument, lintFromString, Source } from "@redocly/openapi-core";
import { auditDocument } from "../src/operations/openapi-audit/audit.ts";
import { auditJob } from "../src/operations/openapi-audit/index.ts";
import { AuditPool } from "../src/operations/openapi-audit/pool.ts";
import { sampleContract } from "../src/operations/openapi-audit/sample-contract.ts";
import { OpenApiAuditRequest } from "../src/operations/openapi-audit/schema.ts";
import { type BenchRow, report } from "./lib.ts";

const contract = sampleContract(40);
const text = JSON.stringify(contract);
const BATCH = 6;
const WARMUP = 4;

type Variant = { name: string; audit: () => Promise<unknown>; concurrency: number; batches: number[] };

const round = (variant: Variant) => Promise.all(Array.from({ length: variant.concurrency }, variant.audit));

/**
 * Wall-clock milliseconds per audit, median of 5 batches of BATCH rounds (`concurrency` audits at a
 * time). The variants take turns batch by batch, so a busy moment of this shared machine falls on
 * all of them alike.
 */
async function measure(variants: Variant[]): Promise<void> {
  for (const variant of variants) for (let i = 0; i < WARMUP; i++) await round(variant);
  for (let batch = 0; batch < 5; batch++) {
    for (const variant of variants) {
      const start = process.hrtime.bigint();
      for (let i = 0; i < BATCH; i++) await round(variant);
      variant.batches.push(Number(process.hrtime.bigint() - start) / 1e6 / (BATCH * variant.concurrency));
    }
  }
}

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;

const redoclyConfig = await createConfig({ extends: ["recommended"] });
const redoclyFromText = () =>
  lintFromString({ source: text, absoluteRef: "/contract.json", config: redoclyConfig });
const redoclyFromObject = () =>
  lintDocument({
    document: { source: new Source("/contract.json", text), parsed: contract },
    config: redoclyConfig,
    externalRefResolver: new BaseResolver(),
  });

const pool = new AuditPool();
await pool.warm();
const size = pool.options.size;
const job = auditJob(OpenApiAuditRequest.parse({ contract }));
const request = { contract, maxFindings: 100 };

const viaPool = () => pool.run(auditJob(OpenApiAuditRequest.parse(request)));
const variants: Variant[] = (
  [
    ["Redocly lintFromString (JSON text), in-process", redoclyFromText, 1],
    ["Redocly lintDocument (parsed object), in-process", redoclyFromObject, 1],
    ["openapi-audit auditDocument, in-process", () => auditDocument(job), 1],
    ["openapi-audit request (validate + worker pool), 1 at a time", viaPool, 1],
    [`openapi-audit request (validate + worker pool), ${size} at a time`, viaPool, size],
  ] as const
).map(([name, audit, concurrency]) => ({ name, audit, concurrency, batches: [] }));

await measure(variants);
await pool.close();

const baseline = median((variants[1] as Variant).batches);
const rows: BenchRow[] = variants.map(({ name, concurrency, batches }) => {
  const ms = median(batches);
  return {
    variant: name,
    concurrency,
    "ms/audit": Number(ms.toFixed(1)),
    "audits/s": Number((1000 / ms).toFixed(2)),
    "× Redocly lintDocument": Number((baseline / ms).toFixed(2)),
  };
});

report("openapi-audit", rows, {
  contract: {
    bytes: Buffer.byteLength(text),
    paths: Object.keys(contract.paths as object).length,
    openapi: "3.1.0",
  },
  poolSize: size,
  cpus: os.availableParallelism(),
  loadAverageAtEnd: os.loadavg().map((load) => Number(load.toFixed(2))),
  method:
    "Wall time per audit (median of 5 batches of 6 rounds after 4 warm-up rounds; variants take turns " +
    "batch by batch). Redocly rows call " +
    "@redocly/openapi-core 2.x directly with its recommended config and default resolver; openapi-audit rows " +
    "add the agent rules, the $ref-cycle scan, sorting, and (pool rows) the request schema and a worker thread.",
});
