/**
 * openapi-audit, three tables in one run (bench/results/openapi-audit.json):
 * 1. audits per second on a ~100 KB contract, against calling Redocly's lint directly;
 * 2. side by side on real contracts (the upstreams' published OpenAPI documents in ../shared/reference,
 *    and the small contract files of the operation's tests): findings and time of Redocly alone,
 *    Spectral alone and openapi-audit (both engines under the no-fetch resolvers, merged, agent rules);
 * 3. main-thread time before payment (body read, JSON checks, request schema) for the worst inputs.
 * A generated contract whose schema pattern backtracks catastrophically (`^(a+)+$` against 40 "a"s and a
 * "!": hours for RegExp) is in tables 2 and 3: the engines test the contract's patterns with RE2JS
 * (linear time) once the audit module is loaded, so every in-process row of table 2 does.
 * Run: npx tsx bench/openapi-audit.bench.ts
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { BaseResolver, createConfig, lintDocument, lintFromString, Source } from "@redocly/openapi-core";
import { Document, type RulesetDefinition, Spectral } from "@stoplight/spectral-core";
import SpectralParsers from "@stoplight/spectral-parsers";
import { oas } from "@stoplight/spectral-rulesets";
import { readOperationInput } from "../src/http/read-input.ts";
import { auditDocument, RefusingResolver } from "../src/operations/openapi-audit/audit.ts";
import { type ContractDocument, parseContract } from "../src/operations/openapi-audit/contract.ts";
import { auditJob, openapiAudit } from "../src/operations/openapi-audit/index.ts";
import { AuditPool } from "../src/operations/openapi-audit/pool.ts";
import { OpenApiAuditRequest } from "../src/operations/openapi-audit/schema.ts";
import { refusingSpectralResolver } from "../src/operations/openapi-audit/spectral.ts";
import { EVIL } from "../test/hardening/hostile-inputs.ts";
import { sampleContract } from "../test/helpers/sample-openapi-contract.ts";
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

// The service's pool, with room for a loaded machine: a 422 would end the benchmark, not measure it.
const pool = new AuditPool({ timeLimitMs: 60_000, queueTimeoutMs: 120_000 });
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

// 2. Side by side on real contracts.
const here = path.dirname(new URL(import.meta.url).pathname);
const referenceDir = path.join(here, "..", "..", "shared", "reference");
const fixtureDir = path.join(here, "..", "src", "operations", "openapi-audit", "fixtures");
const documents: { name: string; text: string }[] = [
  ...["ted-api-v3.yaml", "ctg-oas-v2.yaml"]
    .filter((file) => fs.existsSync(path.join(referenceDir, file)))
    .map((file) => ({
      name: `reference/${file}`,
      text: fs.readFileSync(path.join(referenceDir, file), "utf8"),
    })),
  ...fs
    .readdirSync(fixtureDir)
    .sort()
    .map((file) => ({
      name: `fixtures/${file}`,
      text: fs.readFileSync(path.join(fixtureDir, file), "utf8"),
    })),
];
// Issue 16, finding 6: a pattern that backtracks catastrophically, tested against examples by both engines.
const redosContract = {
  openapi: "3.1.0",
  info: { title: "ReDoS", version: "1.0.0" },
  paths: Object.fromEntries(
    Array.from({ length: 6 }, (_, i) => [
      `/names-${i}`,
      {
        post: {
          operationId: `postName${i}`,
          requestBody: {
            content: {
              "application/json": {
                schema: { type: "string", pattern: "^(a+)+$", example: EVIL },
                example: EVIL,
              },
            },
          },
          responses: { "200": { description: "OK" } },
        },
      },
    ]),
  ),
};
documents.push({
  name: "generated/redos-pattern (^(a+)+$, 12 examples)",
  text: JSON.stringify(redosContract),
});
const Parsers = SpectralParsers as unknown as typeof import("@stoplight/spectral-parsers");
const spectral = new Spectral({ resolver: refusingSpectralResolver() });
spectral.setRuleset(oas as RulesetDefinition);
const count = (severities: string[]) => ({
  errors: severities.filter((s) => s === "error").length,
  warnings: severities.filter((s) => s === "warning" || s === "warn").length,
  info: severities.filter((s) => s !== "error" && s !== "warning" && s !== "warn").length,
});
const SPECTRAL_SEVERITY = ["error", "warning", "info", "hint"];
async function timed<T>(run: () => Promise<T>, times = 3): Promise<{ result: T; ms: number }> {
  const runs: number[] = [];
  let result = await run(); // warm-up
  for (let i = 0; i < times; i++) {
    const start = performance.now();
    result = await run();
    runs.push(performance.now() - start);
  }
  return { result, ms: Number(median(runs).toFixed(0)) };
}
const cell = (c: { errors: number; warnings: number; info: number }) =>
  `${c.errors} / ${c.warnings} / ${c.info}`;
const documentRows: BenchRow[] = [];
for (const { name, text } of documents) {
  const parsed = parseContract(text, { inWorker: true });
  if (!parsed.ok) throw new Error(`${name}: ${parsed.issues[0]?.message}`);
  const document = parsed.contract.document as ContractDocument;
  const openapi = parsed.contract.openapi;
  const redocly = await timed(() =>
    lintDocument({
      document: { source: new Source("/contract.json", ""), parsed: document },
      config: redoclyConfig,
      externalRefResolver: new RefusingResolver(),
    }),
  );
  const alone = await timed(() =>
    spectral.run(new Document(JSON.stringify(document), Parsers.Json, "/contract.json")),
  );
  const audit = await timed(() =>
    auditDocument({ document, openapi, ruleset: "recommended", maxFindings: 500 }),
  );
  const findings = audit.result.findings;
  documentRows.push({
    document: name,
    bytes: Buffer.byteLength(text),
    openapi,
    "Redocly e/w/i": cell(count(redocly.result.map((p) => p.severity))),
    "Redocly ms": redocly.ms,
    "Spectral e/w/i": cell(count(alone.result.map((r) => SPECTRAL_SEVERITY[r.severity] as string))),
    "Spectral ms": alone.ms,
    "openapi-audit e/w/i": cell(audit.result.summary),
    "openapi-audit ms": audit.ms,
    "found by both": findings.filter(
      (f) =>
        f.engines.some((e) => e.startsWith("redocly:")) && f.engines.some((e) => e.startsWith("spectral:")),
    ).length,
    valid: String(audit.result.valid),
  });
}
console.log("\nopenapi-audit side by side (errors / warnings / info; ms per audit, median of 3, in-process)");
console.table(documentRows);

// 3. Main-thread time before payment, for the worst inputs (CPU time of the process, best and median of 15).
const MiB = 1024 * 1024;
const requestFor = (body: string) =>
  ({
    req: {
      raw: new Request("http://bench/v1/openapi-audit", {
        method: "POST",
        body,
        headers: { "content-type": "application/json", "content-length": String(Buffer.byteLength(body)) },
      }),
      queries: () => ({}),
      header: () => "application/json",
    },
  }) as unknown as Parameters<typeof readOperationInput>[0];
const keysYaml = (n: number) =>
  `openapi: 3.1.0\ninfo: {title: t, version: '1'}\npaths: {}\nx-data:\n${Array.from({ length: n }, (_, i) => `  k${i}: 1\n`).join("")}`;
let bigYaml = keysYaml(10);
while (bigYaml.length < 3 * MiB - 64) bigYaml += `  k${bigYaml.length}: 1\n`;
const bigJson = JSON.stringify({
  openapi: "3.1.0",
  info: { title: "t", version: "1" },
  paths: {},
  "x-d": Object.fromEntries(Array.from({ length: 230_000 }, (_, i) => [`k${i}`, i])),
});
const objectBody = (n: number) =>
  JSON.stringify({
    contract: {
      openapi: "3.1.0",
      info: { title: "t", version: "1" },
      paths: {},
      "x-d": Object.fromEntries(Array.from({ length: n }, (_, i) => [`key-number-${i}`, i])),
    },
  });
const hostile: [string, string][] = [
  ["YAML text, 85,000 keys in one mapping (68 s before)", JSON.stringify({ contract: keysYaml(85_000) })],
  ["YAML text, 3 MiB of keys", JSON.stringify({ contract: bigYaml.slice(0, 3 * MiB - 10) })],
  ["JSON text, 3 MiB, 230,000 keys", JSON.stringify({ contract: `${bigJson.slice(0, 3 * MiB - 200)}}}` })],
  ["object, 11,990 unique keys (under the value cap)", objectBody(11_990)],
  ["object, 300,000 unique keys (over the caps)", objectBody(300_000)],
  ["4 MiB of whitespace, then {}", `${" ".repeat(4 * MiB - 10)}{}`],
  [
    "YAML text, 8 KiB (parsed on the main thread)",
    JSON.stringify({ contract: keysYaml(720).slice(0, 8 * 1024 - 8) }),
  ],
  [
    "object with a catastrophic pattern and 12 examples (audited after payment)",
    JSON.stringify({ contract: redosContract }),
  ],
  [
    "YAML text with aliases (99 × a 5,000-item list)",
    JSON.stringify({
      contract: `openapi: 3.1.0\ninfo: {title: t, version: '1'}\npaths: {}\na: &a [${"x,".repeat(5000)}x]\nb: [${"*a,".repeat(99)}*a]\n`,
    }),
  ],
];
const mainThreadRows: BenchRow[] = [];
for (const [input, body] of hostile) {
  const cpu: number[] = [];
  let outcome = "";
  for (let i = 0; i < 15; i++) {
    const request = requestFor(body);
    const before = process.cpuUsage();
    try {
      const value = (await readOperationInput(request, openapiAudit)) as { contract: { deferred: boolean } };
      outcome = value.contract.deferred ? "accepted; parsed in the worker after payment" : "accepted; parsed";
    } catch (error) {
      const problem = error as {
        status?: number;
        extensions?: { errors?: { message: string }[] };
        detail?: string;
      };
      outcome = `${problem.status} ${(problem.extensions?.errors?.[0]?.message ?? problem.detail ?? "").slice(0, 70)}`;
    }
    const used = process.cpuUsage(before);
    cpu.push((used.user + used.system) / 1000);
  }
  cpu.sort((a, b) => a - b);
  mainThreadRows.push({
    input,
    "body bytes": Buffer.byteLength(body),
    "CPU ms best": Number((cpu[0] as number).toFixed(1)),
    "CPU ms median": Number((cpu[7] as number).toFixed(1)),
    outcome,
  });
}
console.log("\nopenapi-audit main-thread time before payment (body read, JSON checks, request schema)");
console.table(mainThreadRows);

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
  documents: documentRows,
  mainThreadBeforePayment: mainThreadRows,
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
    "add Spectral's OpenAPI ruleset, the agent rules, the $ref-cycle scan, the merge, sorting, and (pool rows) " +
    "the request schema and a worker thread. documents: Redocly alone = lintDocument with its recommended " +
    "config, Spectral alone = spectral:oas, both under the audit's refusing resolvers; openapi-audit = the whole " +
    "audit (recommended ruleset), findings merged; ms = median of 3 after a warm-up, in-process. " +
    "mainThreadBeforePayment: process CPU time of readOperationInput (what runs before the 402), best and median of 15. " +
    "Patterns: once the audit module is loaded, both engines test the contract's patterns with RE2JS (linear time), " +
    "in every in-process row (Redocly alone and Spectral alone included).",
});
