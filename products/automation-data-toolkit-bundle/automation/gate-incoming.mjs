#!/usr/bin/env node
// Gate every incoming data file: each file is matched to a gate by the rules of a gates file and
// checked with csv-json-quality-toolkit's quality gate. A file that no rule matches fails (a new
// kind of file needs a gate before it is accepted). For CI: see ci/data-gate.yml.
//
// usage: node automation/gate-incoming.mjs --gates data-gates.json [--summary summary.md] <file|folder>...
// data-gates.json: { "rules": [{ "match": "data/contacts/*.csv", "gate": "gates/contacts.gate.json" }],
//                    "ignore": ["data/README.md"] }
//   match: a path pattern relative to the current folder (* within a name, ** across folders);
//   gate: a quality-gate file, relative to the gates file. The first matching rule wins.
// exit 0 every file passes, 1 a file fails or has no gate, 2 wrong call
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const QUALITY_GATE = path.resolve(import.meta.dirname, "../csv-json-quality-toolkit/gates/quality-gate.mjs");
const DATA_FILE = /\.(csv|json|jsonl|ndjson)$/i;

export function globToRegExp(pattern) {
  let source = "";
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === "*" && pattern[i + 1] === "*") {
      source += pattern[i + 2] === "/" ? "(?:.*/)?" : ".*";
      i += pattern[i + 2] === "/" ? 2 : 1;
    } else if (c === "*") source += "[^/]*";
    else if (c === "?") source += "[^/]";
    else source += c.replace(/[.+^${}()|[\]\\]/g, "\\$&");
  }
  return new RegExp(`^${source}$`);
}

/** The data files named (folders walked), as paths relative to the current folder with "/". */
export function listFiles(inputs) {
  const files = [];
  const visit = (p) => {
    const stat = fs.statSync(p);
    if (stat.isDirectory()) for (const name of fs.readdirSync(p).sort()) visit(path.join(p, name));
    else files.push(path.relative(process.cwd(), p).split(path.sep).join("/"));
  };
  for (const input of inputs) visit(input);
  return files;
}

/** Gates each file; returns { pass, results: [{ file, gate, pass, failed, report? }] }. */
export function gateFiles(files, gatesFile) {
  const config = JSON.parse(fs.readFileSync(gatesFile, "utf8"));
  if (!Array.isArray(config.rules)) throw new Error(`${gatesFile}: "rules" must be a list`);
  const rules = config.rules.map((rule) => ({ ...rule, test: globToRegExp(rule.match), gatePath: path.resolve(path.dirname(gatesFile), rule.gate) }));
  const ignore = (config.ignore ?? []).map(globToRegExp);
  const results = [];
  for (const file of files) {
    if (ignore.some((re) => re.test(file))) continue;
    const rule = rules.find((r) => r.test.test(file));
    if (!rule) {
      results.push({ file, gate: null, pass: false, failed: [DATA_FILE.test(file) ? "no gate matches this file: add a rule to the gates file" : "not a data file and not ignored"] });
      continue;
    }
    const run = spawnSync(process.execPath, [QUALITY_GATE, file, "--gate", rule.gatePath], { encoding: "utf8" });
    let report;
    try {
      report = JSON.parse(run.stdout);
    } catch {}
    const failed = report?.rules?.filter((r) => !r.ok).map((r) => `${r.rule} (${r.detail})`) ?? [`the quality gate exited ${run.status}: ${run.stderr.trim().split("\n")[0]}`];
    results.push({ file, gate: rule.gate, pass: run.status === 0, failed: run.status === 0 ? [] : failed, report });
  }
  return { pass: results.every((r) => r.pass), results };
}

/** A Markdown table for a CI job summary. */
export function summaryMarkdown({ pass, results }) {
  const lines = [`## Data gate: ${pass ? "all files pass" : "FAILED"}`, "", "| File | Gate | Result |", "|---|---|---|"];
  for (const r of results) lines.push(`| \`${r.file}\` | ${r.gate ? `\`${r.gate}\`` : "—"} | ${r.pass ? "pass" : `**fail**: ${r.failed.join("; ").replaceAll("|", "\\|")}`} |`);
  if (results.length === 0) lines.push("| (no data file changed) | | |");
  return `${lines.join("\n")}\n`;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const option = (name) => {
    const i = args.indexOf(`--${name}`);
    return i >= 0 ? args.splice(i, 2)[1] : undefined;
  };
  const gates = option("gates");
  const summary = option("summary");
  const wrong = (message) => {
    process.stderr.write(`gate-incoming: ${message}\n`);
    process.exit(2);
  };
  if (!gates || args.some((a) => a.startsWith("--"))) wrong("usage: node automation/gate-incoming.mjs --gates data-gates.json [--summary summary.md] <file|folder>...");
  if (!fs.existsSync(gates)) wrong(`${gates} does not exist`);
  let outcome;
  try {
    const missing = args.filter((a) => !fs.existsSync(a));
    if (missing.length > 0) wrong(`not found: ${missing.join(", ")}`);
    outcome = gateFiles(listFiles(args), gates);
  } catch (error) {
    wrong(error.message);
  }
  process.stdout.write(`${JSON.stringify({ pass: outcome.pass, files: outcome.results.map(({ report, ...r }) => r) }, null, 2)}\n`);
  if (summary) fs.appendFileSync(summary, summaryMarkdown(outcome));
  process.exitCode = outcome.pass ? 0 : 1;
}
