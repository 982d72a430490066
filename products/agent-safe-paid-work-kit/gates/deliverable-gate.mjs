#!/usr/bin/env node
// Acceptance gate for a paid deliverable (a folder), checked before paying or before delivering.
// usage: node gates/deliverable-gate.mjs <folder> --spec acceptance.json
// spec: { "requiredFiles": ["report.md"], "maxBytes": 1000000, "minWords": { "report.md": 300 },
//   "mustContain": { "report.md": ["## Sources"] }, "jsonFiles": ["data.json"], "sha256": { "f": "hex" },
//   "noSecrets": true }
// exit 0 accept, 1 reject (each failed check listed), 2 usage
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { scanSecrets } from "../lib/secrets.mjs";

const args = process.argv.slice(2);
const specIndex = args.indexOf("--spec");
const folder = args.find((arg, i) => !arg.startsWith("--") && i !== specIndex + 1);
if (!folder || specIndex < 0) {
  process.stderr.write("usage: node gates/deliverable-gate.mjs <folder> --spec acceptance.json\n");
  process.exit(2);
}
let spec;
try {
  spec = JSON.parse(fs.readFileSync(args[specIndex + 1], "utf8"));
  if (!fs.statSync(folder).isDirectory()) throw new Error(`${folder} is not a folder`);
} catch (error) {
  process.stderr.write(`deliverable-gate: ${error.message}\n`);
  process.exit(2);
}
const checks = [];
const check = (name, ok, detail = "") => checks.push({ check: name, ok, detail });
const files = [];
const walk = (dir) => {
  for (const item of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, item.name);
    if (item.isDirectory()) walk(full);
    else files.push(path.relative(folder, full).split(path.sep).join("/"));
  }
};
walk(folder);
const read = (file) => fs.readFileSync(path.join(folder, file));

for (const file of spec.requiredFiles ?? []) check(`${file} is delivered`, files.includes(file));
if (spec.maxBytes !== undefined) {
  const total = files.reduce((sum, file) => sum + fs.statSync(path.join(folder, file)).size, 0);
  check(`total size ≤ ${spec.maxBytes} bytes`, total <= spec.maxBytes, `${total} bytes`);
}
for (const [file, min] of Object.entries(spec.minWords ?? {})) {
  const words = files.includes(file) ? read(file).toString("utf8").split(/\s+/).filter(Boolean).length : 0;
  check(`${file} has ≥ ${min} words`, words >= min, `${words} words`);
}
for (const [file, needles] of Object.entries(spec.mustContain ?? {})) {
  const text = files.includes(file) ? read(file).toString("utf8") : "";
  for (const needle of needles) check(`${file} contains "${needle}"`, text.includes(needle));
}
for (const file of spec.jsonFiles ?? []) {
  let ok = false;
  try {
    JSON.parse(read(file).toString("utf8"));
    ok = true;
  } catch {}
  check(`${file} is valid JSON`, ok);
}
for (const [file, digest] of Object.entries(spec.sha256 ?? {})) {
  const actual = files.includes(file) ? createHash("sha256").update(read(file)).digest("hex") : "(missing)";
  check(`${file} has sha256 ${digest.slice(0, 12)}…`, actual === digest, actual);
}
if (spec.noSecrets) {
  // Keys and tokens that must never travel inside a deliverable (lib/secrets.mjs lists the formats).
  for (const file of files) {
    const found = new Map();
    for (const finding of scanSecrets(read(file).toString("utf8"))) {
      if (!found.has(finding.rule)) found.set(finding.rule, []);
      found.get(finding.rule).push(`line ${finding.line}: ${finding.excerpt}`);
    }
    for (const [rule, where] of found) check(`${file} holds no ${rule}`, false, where.join("; "));
  }
  check("no secrets found", !checks.some((c) => !c.ok && c.check.includes(" holds no ")));
}
const accept = checks.every((c) => c.ok);
process.stdout.write(`${JSON.stringify({ folder, accept, checks }, null, 2)}\n`);
process.exitCode = accept ? 0 : 1;
