#!/usr/bin/env node
// Gate every incoming data file: each file is matched to a gate by the rules of a gates file and
// checked with csv-json-quality-toolkit's quality gate. A file that no rule matches fails (a new
// kind of file needs a gate before it is accepted). For CI: see ci/data-gate.yml.
//
// usage: node automation/gate-incoming.mjs --gates data-gates.json [--summary summary.md]
//          [--changed-since <commit>] <file|folder>...
// data-gates.json: { "rules": [{ "match": "data/contacts/*.csv", "gate": "gates/contacts.gate.json" }],
//                    "ignore": ["data/README.md"] }
//   match: a path pattern relative to the current folder (* within a name, ** across folders);
//   gate: a quality-gate file, relative to the gates file. The first matching rule wins.
// --changed-since: gate only the files under the paths named that changed since that commit (to
//   HEAD, by git; every change but a deletion). It fails closed: a base that git cannot diff against (empty, the
//   all-zero base of a branch's first push, a commit missing after a force-push or from a shallow
//   clone) is exit 2, never "nothing changed".
// exit 0 every file passes, 1 a file fails or has no gate, 2 wrong call, or the change cannot be known
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

/**
 * The files under `paths` that changed between `base` and HEAD (all but deletions), relative to the
 * current folder; throws (with what to do) when git cannot say, rather than answering "none".
 */
export function changedFiles(base, paths) {
  if (!base) throw new Error("--changed-since has no commit: cannot tell which files changed");
  if (/^0+$/.test(base)) {
    throw new Error(`cannot tell which files changed: the base ${base} is all zeros (the first push of a branch); gate the folders instead: node automation/gate-incoming.mjs --gates <file> ${paths.join(" ")}`);
  }
  // A base that git would read as an option (`--output=…`) is not a commit.
  if (base.startsWith("-")) throw new Error(`cannot tell which files changed: ${JSON.stringify(base)} is not a commit`);
  const git = (args) => spawnSync("git", args, { encoding: "buffer" });
  const commit = git(["rev-parse", "--verify", "--quiet", `${base}^{commit}`]);
  if (commit.error) throw new Error(`git cannot run: ${commit.error.message}`);
  if (commit.status !== 0) throw new Error(`cannot tell which files changed: ${base} is not a commit of this clone (a force-push, or a shallow clone: fetch the whole history)`);
  const sha = commit.stdout.toString("utf8").trim();
  const diff = git(["-c", "core.quotepath=off", "diff", "--name-only", "--relative", "--diff-filter=d", "-z", sha, "HEAD", "--", ...paths]);
  if (diff.status !== 0) throw new Error(`git diff ${base} HEAD failed: ${diff.stderr.toString("utf8").trim().split("\n")[0]}`);
  return diff.stdout.toString("utf8").split("\0").filter(Boolean);
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
    // Present without a value (`--changed-since ""` from an empty variable, or last): null.
    return i >= 0 ? (args.splice(i, 2)[1] || null) : undefined;
  };
  const gates = option("gates");
  const summary = option("summary");
  const changedSince = option("changed-since");
  const wrong = (message) => {
    process.stderr.write(`gate-incoming: ${message}\n`);
    // A CI job summary says why nothing was gated.
    if (summary) fs.appendFileSync(summary, `## Data gate: FAILED\n\n${message}\n`);
    process.exit(2);
  };
  if (!gates || args.some((a) => a.startsWith("--"))) wrong("usage: node automation/gate-incoming.mjs --gates data-gates.json [--summary summary.md] [--changed-since <commit>] <file|folder>...");
  if (!fs.existsSync(gates)) wrong(`${gates} does not exist`);
  if (args.length === 0) wrong("name the files or folders to gate");
  let outcome;
  try {
    let files;
    if (changedSince === undefined) {
      const missing = args.filter((a) => !fs.existsSync(a));
      if (missing.length > 0) wrong(`not found: ${missing.join(", ")}`);
      files = listFiles(args);
    } else files = changedFiles(changedSince ?? "", args);
    outcome = gateFiles(files, gates);
  } catch (error) {
    wrong(error.message);
  }
  process.stdout.write(`${JSON.stringify({ pass: outcome.pass, files: outcome.results.map(({ report, ...r }) => r) }, null, 2)}\n`);
  if (summary) fs.appendFileSync(summary, summaryMarkdown(outcome));
  process.exitCode = outcome.pass ? 0 : 1;
}
