#!/usr/bin/env node
// Throughput and peak memory of profile, validate and the gate on a generated contacts file.
// usage: node bench/bench.mjs [rows=1000000] [--heap-mb 256] [--keep]
// Writes the file to a temporary folder, runs each script once in a child process with a heap limit
// (V8's --max-old-space-size), and prints one JSON line per run: seconds, rows/s, MB/s, peak RSS.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const root = path.resolve(import.meta.dirname, "..");
const argv = process.argv.slice(2);
const rows = Number(argv.find((a) => /^\d+$/.test(a)) ?? 1_000_000);
const heapAt = argv.indexOf("--heap-mb");
const heapMb = heapAt === -1 ? 256 : Number(argv[heapAt + 1]);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "csv-kit-bench-"));
const file = path.join(dir, "contacts.csv");

// Contacts shaped like schemas/contacts.schema.json: unique ids and emails, a few countries,
// names with repeats, real dates; every 50th name blank (the gate allows 20%).
const fd = fs.openSync(file, "w");
fs.writeSync(fd, "id,name,email,country,signed_up\n");
let chunk = "";
for (let i = 1; i <= rows; i++) {
  const name = i % 50 === 0 ? "" : `Person ${i % 9973}`;
  chunk += `${i},${name},person${i}@example.com,${["FRA", "DEU", "USA", "GBR", "JPN"][i % 5]},20${10 + (i % 15)}-${String((i % 12) + 1).padStart(2, "0")}-${String((i % 28) + 1).padStart(2, "0")}\n`;
  if (chunk.length > 1 << 20) {
    fs.writeSync(fd, chunk);
    chunk = "";
  }
}
fs.writeSync(fd, chunk);
fs.closeSync(fd);
const bytes = fs.statSync(file).size;

const runs = [
  ["profile", "scripts/profile.mjs", [file, "--quiet"]],
  ["validate", "scripts/validate.mjs", [file, "--schema", path.join(root, "schemas/contacts.schema.json"), "--quiet"]],
  ["gate", "gates/quality-gate.mjs", [file, "--gate", path.join(root, "schemas/contacts.gate.json"), "--quiet"]],
];
const results = [];
for (const [name, script, args] of runs) {
  const started = process.hrtime.bigint();
  const child = spawnSync(process.execPath, [`--max-old-space-size=${heapMb}`, path.join(root, "bench/measure.mjs"), path.join(root, script), ...args], {
    cwd: root,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe", "pipe"],
    maxBuffer: 64 << 20,
  });
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const memory = JSON.parse(child.output[3].trim().split("\n").pop());
  const result = {
    run: name,
    rows,
    mb: Math.round(bytes / 1e5) / 10,
    exit: child.status,
    seconds: Math.round(seconds * 100) / 100,
    rowsPerSecond: Math.round(rows / seconds),
    mbPerSecond: Math.round((bytes / 1e6 / seconds) * 10) / 10,
    heapLimitMb: heapMb,
    ...memory,
  };
  if (child.status !== 0) result.stderr = child.stderr.trim();
  results.push(result);
  process.stdout.write(`${JSON.stringify(result)}\n`);
}
if (!argv.includes("--keep")) fs.rmSync(dir, { recursive: true, force: true });
else process.stderr.write(`kept ${file}\n`);
process.exitCode = results.every((r) => r.exit === 0) ? 0 : 1;
