// The CI template that gates every incoming data file: the script, and the workflow's own run step
// executed in a real git repository laid out as the workflow expects.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { bundle, node, tempDir } from "./helpers.mjs";

const csvKit = path.join(bundle, "csv-json-quality-toolkit");
const clean = fs.readFileSync(path.join(csvKit, "examples/contacts-clean.csv"));
const dirty = fs.readFileSync(path.join(csvKit, "examples/contacts-dirty.csv"));

function repo() {
  const dir = tempDir();
  fs.mkdirSync(path.join(dir, "data/contacts/2026"), { recursive: true });
  fs.mkdirSync(path.join(dir, "data/unknown"), { recursive: true });
  fs.writeFileSync(path.join(dir, "data/contacts/clean.csv"), clean);
  fs.writeFileSync(path.join(dir, "data/README.md"), "about the data\n");
  // The example gates file as shipped: its gate paths assume the bundle at tools/automation-data-toolkit-bundle/.
  fs.cpSync(bundle, path.join(dir, "tools/automation-data-toolkit-bundle"), { recursive: true });
  fs.copyFileSync(path.join(bundle, "automation/data-gates.example.json"), path.join(dir, ".data-gates.json"));
  return dir;
}

test("gate-incoming: a clean file passes, a dirty one fails with its rules, an unknown kind of file fails, ignored files are skipped", () => {
  const dir = repo();
  fs.writeFileSync(path.join(dir, "data/contacts/2026/dirty.csv"), dirty);
  fs.writeFileSync(path.join(dir, "data/unknown/new.csv"), clean);
  const summary = path.join(dir, "summary.md");
  const result = node("automation/gate-incoming.mjs", ["--gates", ".data-gates.json", "--summary", summary, "data"], { cwd: dir });
  assert.equal(result.status, 1, result.stderr);
  const files = Object.fromEntries(result.json.files.map((f) => [f.file, f]));
  assert.deepEqual(Object.keys(files).sort(), ["data/contacts/2026/dirty.csv", "data/contacts/clean.csv", "data/unknown/new.csv"]);
  assert.equal(files["data/contacts/clean.csv"].pass, true);
  assert.equal(files["data/contacts/2026/dirty.csv"].pass, false);
  assert.ok(files["data/contacts/2026/dirty.csv"].failed.some((f) => f.startsWith("invalid row rate")), files["data/contacts/2026/dirty.csv"].failed.join("; "));
  assert.deepEqual(files["data/unknown/new.csv"].failed, ["no gate matches this file: add a rule to the gates file"]);
  const md = fs.readFileSync(summary, "utf8");
  assert.match(md, /## Data gate: FAILED/);
  assert.match(md, /\| `data\/contacts\/clean.csv` \| .* \| pass \|/);
  const ok = node("automation/gate-incoming.mjs", ["--gates", ".data-gates.json", "data/contacts/clean.csv"], { cwd: dir });
  assert.equal(ok.status, 0, ok.stdout);
});

test("gate-incoming: wrong calls exit 2 with one line", () => {
  const dir = repo();
  for (const args of [["data"], ["--gates", "missing.json", "data"], ["--gates", ".data-gates.json", "nope.csv"], ["--gates", ".data-gates.json", "--bogus", "data"]]) {
    const result = node("automation/gate-incoming.mjs", args, { cwd: dir });
    assert.equal(result.status, 2, `${args.join(" ")}: ${result.stdout}${result.stderr}`);
    assert.equal(result.stderr.trim().split("\n").length, 1, result.stderr);
  }
});

/** The `run: |` block of a workflow step, as the runner's bash gets it. */
function runBlock(yaml, stepName) {
  const lines = yaml.split("\n");
  const start = lines.findIndex((l) => l.includes(`name: ${stepName}`));
  const run = lines.findIndex((l, i) => i > start && /^\s+run: \|$/.test(l));
  const indent = lines[run + 1].match(/^\s*/)[0].length;
  const block = [];
  for (let i = run + 1; i < lines.length && (lines[i].trim() === "" || lines[i].match(/^\s*/)[0].length >= indent); i++) block.push(lines[i].slice(indent));
  return block.join("\n");
}

const has = (cmd) => spawnSync(cmd, ["--version"], { encoding: "utf8" }).status === 0;

test("ci/data-gate.yml: its run step, in a repository, fails a pull request that adds a bad file and passes one that adds a good one", { skip: !has("git") || !has("bash") ? "git and bash are needed" : false }, () => {
  const yaml = fs.readFileSync(path.join(bundle, "automation/ci/data-gate.yml"), "utf8");
  assert.match(yaml, /pull_request:/);
  const script = runBlock(yaml, "Gate the data files this change adds or modifies");
  const dir = repo();
  const git = (...args) => {
    const r = spawnSync("git", args, { cwd: dir, encoding: "utf8", env: { ...process.env, GIT_AUTHOR_NAME: "t", GIT_AUTHOR_EMAIL: "t@example.org", GIT_COMMITTER_NAME: "t", GIT_COMMITTER_EMAIL: "t@example.org" } });
    assert.equal(r.status, 0, r.stderr);
    return r.stdout.trim();
  };
  git("init", "-q");
  git("add", ".");
  git("commit", "-q", "-m", "base");
  const base = git("rev-parse", "HEAD");
  const step = () => {
    const summary = path.join(dir, "summary.md");
    fs.writeFileSync(summary, "");
    const r = spawnSync("bash", ["-e", "-c", script], { cwd: dir, encoding: "utf8", env: { PATH: process.env.PATH, HOME: process.env.HOME, BASE: base, GITHUB_STEP_SUMMARY: summary } });
    return { status: r.status, output: r.stdout + r.stderr, summary: fs.readFileSync(summary, "utf8") };
  };
  assert.equal(step().status, 0); // nothing changed under data/
  fs.writeFileSync(path.join(dir, "data/contacts/2026/january.csv"), clean);
  fs.writeFileSync(path.join(dir, "data/contacts/2026/with space.csv"), clean);
  git("add", ".");
  git("commit", "-q", "-m", "good data");
  const good = step();
  assert.equal(good.status, 0, good.output);
  assert.match(good.summary, /all files pass/);
  assert.match(good.summary, /with space\.csv/);
  fs.writeFileSync(path.join(dir, "data/contacts/2026/february.csv"), dirty);
  git("add", ".");
  git("commit", "-q", "-m", "bad data");
  const bad = step();
  assert.equal(bad.status, 1, bad.output);
  assert.match(bad.summary, /february\.csv` .* \*\*fail\*\*/);
});
