#!/usr/bin/env node
// Throughput, peak memory and correctness of profile, validate, normalise and the gate on generated
// files of three shapes:
//   contacts  N rows (default 1,000,000) shaped like schemas/contacts.schema.json
//   quoted    N rows (default 2,000,000) of the same contacts, every name quoted as Python's csv
//             module writes it: a comma, doubled quotes, a CRLF inside, 2-, 3- and 4-byte UTF-8
//   wide      500 columns × N rows (default 20,000), most columns with a distinct value per row
// usage: node bench/bench.mjs [contacts|quoted|wide|all] [rows] [--heap-mb 256 (0: node's default)] [--keep] [--markdown]
// Each script runs once in its own process with a heap limit (V8's --max-old-space-size); one JSON
// line per run: seconds, CPU seconds, rows/s, MB/s, peak RSS, and whether the result is the one the
// generated file must give (`correct`). --markdown also prints the README's table. Exit 1 when a run
// fails or gives a wrong result.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const root = path.resolve(import.meta.dirname, "..");
const argv = process.argv.slice(2);
const shapeArg = argv.find((a) => /^(contacts|quoted|wide|all)$/.test(a)) ?? "contacts";
const heapAt = argv.indexOf("--heap-mb");
const rowsArg = argv.find((a, i) => /^\d+$/.test(a) && (heapAt === -1 || i !== heapAt + 1));
const heapMb = heapAt === -1 ? 256 : Number(argv[heapAt + 1]);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "csv-kit-bench-"));

/** Writes a file line by line in 1 MB pieces (never one large string). */
function writeLines(file, header, rows, line) {
  const fd = fs.openSync(file, "w");
  let chunk = header;
  for (let i = 1; i <= rows; i++) {
    chunk += line(i);
    if (chunk.length > 1 << 20) {
      fs.writeSync(fd, chunk);
      chunk = "";
    }
  }
  fs.writeSync(fd, chunk);
  fs.closeSync(fd);
}

const COUNTRIES = ["FRA", "DEU", "USA", "GBR", "JPN"];
const date = (i) => `20${10 + (i % 15)}-${String((i % 12) + 1).padStart(2, "0")}-${String((i % 28) + 1).padStart(2, "0")}`;
/** A name as Python's csv writer quotes it (QUOTE_MINIMAL, CRLF): quotes doubled, the field quoted. */
const quotedName = (i) => {
  const names = [`Doe, Jane ${i % 9973}`, `Ada "The Countess" ${i % 977}`, `Zoë Ørsted 😀 ${i % 613}`, `Line one\r\nline two ${i % 89}`, `Ngô Bảo Châu, 名 ${i % 31}`];
  return `"${names[i % names.length].replaceAll('"', '""')}"`;
};

/** The shapes: the file, the scripts' arguments, and what a correct result is. */
const shapes = {
  contacts(rows = 1_000_000) {
    const file = path.join(dir, "contacts.csv");
    writeLines(file, "id,name,email,country,signed_up\n", rows, (i) => `${i},${i % 50 === 0 ? "" : `Person ${i % 9973}`},person${i}@example.com,${COUNTRIES[i % 5]},${date(i)}\n`);
    return { file, rows, columns: 5, schema: path.join(root, "schemas/contacts.schema.json"), gate: path.join(root, "schemas/contacts.gate.json") };
  },
  quoted(rows = 2_000_000) {
    const file = path.join(dir, "quoted.csv");
    writeLines(file, "id,name,email,country,signed_up\r\n", rows, (i) => `${i},${i % 50 === 0 ? "" : quotedName(i)},person${i}@example.com,${COUNTRIES[i % 5]},${date(i)}\r\n`);
    return { file, rows, columns: 5, schema: path.join(root, "schemas/contacts.schema.json"), gate: path.join(root, "schemas/contacts.gate.json") };
  },
  wide(rows = 20_000, columns = 500) {
    const file = path.join(dir, "wide.csv");
    const names = Array.from({ length: columns }, (_, j) => `c${j}`);
    // c0 the key; then in turn a number distinct per row, a text distinct per row, one of three values.
    const value = (i, j) => (j === 0 ? i : j % 3 === 1 ? i * j : j % 3 === 2 ? `w${i}x${j}` : ["x", "y", "z"][i % 3]);
    writeLines(file, `${names.join(",")}\n`, rows, (i) => `${names.map((_, j) => value(i, j)).join(",")}\n`);
    const properties = Object.fromEntries(names.map((name, j) => [name, j === 0 || j % 3 === 1 ? { type: "integer", minimum: 0 } : { type: "string", minLength: 1 }]));
    const schema = path.join(dir, "wide.schema.json");
    fs.writeFileSync(schema, JSON.stringify({ type: "object", required: names, additionalProperties: false, properties }));
    const gate = path.join(dir, "wide.gate.json");
    fs.writeFileSync(gate, JSON.stringify({ schema: "wide.schema.json", minRows: 1, keyColumns: ["c0"], maxDuplicateRate: 0, maxBlankRate: { c1: 0, c2: 0 }, maxInvalidRate: 0 }));
    return { file, rows, columns, schema, gate };
  },
};

/** Each script, its arguments, and the check of its output against what the file must give. */
const runs = (shape) => [
  ["profile", "scripts/profile.mjs", [shape.file, "--quiet"], ({ stdout }) => {
    const report = JSON.parse(stdout);
    return report.rows === shape.rows && report.parseProblemCount === 0 && report.columns.length === shape.columns && report.columns.every((c) => c.filled + c.blank === shape.rows);
  }],
  ["validate", "scripts/validate.mjs", [shape.file, "--schema", shape.schema, "--quiet"], ({ stdout }) => {
    const report = JSON.parse(stdout);
    return report.valid === true && report.rows === shape.rows;
  }],
  ["normalise", "scripts/normalise.mjs", [shape.file, "--out", path.join(dir, "normalised.csv"), "--keep-blank-rows", "--quiet"], ({ stderr }) => {
    const counts = JSON.parse(stderr.trim().split("\n").pop());
    fs.rmSync(path.join(dir, "normalised.csv"), { force: true });
    return counts.inputRows === shape.rows && counts.outputRows === shape.rows;
  }],
  ["gate", "gates/quality-gate.mjs", [shape.file, "--gate", shape.gate, "--quiet"], ({ stdout }) => {
    const report = JSON.parse(stdout);
    return report.pass === true && report.rows === shape.rows;
  }],
];

const results = [];
for (const name of shapeArg === "all" ? Object.keys(shapes) : [shapeArg]) {
  const shape = shapes[name](rowsArg === undefined || shapeArg === "all" ? undefined : Number(rowsArg));
  const bytes = fs.statSync(shape.file).size;
  for (const [run, script, args, check] of runs(shape)) {
    const started = process.hrtime.bigint();
    const heapFlag = heapMb > 0 ? [`--max-old-space-size=${heapMb}`] : [];
    const child = spawnSync(process.execPath, [...heapFlag, path.join(root, "bench/measure.mjs"), path.join(root, script), ...args], {
      cwd: root,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe", "pipe"],
      maxBuffer: 256 << 20,
    });
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    const memory = JSON.parse(child.output[3].trim().split("\n").pop());
    let correct = false;
    try {
      correct = child.status === 0 && check(child);
    } catch {}
    const result = {
      shape: name,
      run,
      rows: shape.rows,
      columns: shape.columns,
      mb: Math.round(bytes / 1e5) / 10,
      exit: child.status,
      correct,
      seconds: Math.round(seconds * 100) / 100,
      rowsPerSecond: Math.round(shape.rows / seconds),
      mbPerSecond: Math.round((bytes / 1e6 / seconds) * 10) / 10,
      heapLimitMb: heapMb > 0 ? heapMb : "node's default",
      ...memory,
    };
    if (!correct) result.output = `${child.stdout.slice(0, 2000)}\n${child.stderr.slice(-2000)}`.trim();
    results.push(result);
    process.stdout.write(`${JSON.stringify(result)}\n`);
  }
}
if (argv.includes("--markdown")) {
  const n = (x) => x.toLocaleString("en-US");
  process.stdout.write("\n| file | run | wall time | CPU time | rows/s (wall) | MB/s (wall) | peak RSS | correct |\n|---|---|---|---|---|---|---|---|\n");
  for (const r of results) {
    process.stdout.write(`| ${r.shape}: ${n(r.rows)} rows × ${r.columns} columns, ${r.mb} MB | \`${r.run}\` | ${r.seconds} s | ${r.cpuSeconds} s | ${n(r.rowsPerSecond)} | ${r.mbPerSecond} | ${r.maxRssMb} MB | ${r.correct ? "yes" : "**no**"} |\n`);
  }
}
if (!argv.includes("--keep")) fs.rmSync(dir, { recursive: true, force: true });
else process.stderr.write(`kept ${dir}\n`);
process.exitCode = results.every((r) => r.correct) ? 0 : 1;
