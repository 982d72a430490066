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
const needsGit = { skip: !has("git") || !has("bash") ? "git and bash are needed" : false };
const gitEnv = { ...process.env, GIT_AUTHOR_NAME: "t", GIT_AUTHOR_EMAIL: "t@example.org", GIT_COMMITTER_NAME: "t", GIT_COMMITTER_EMAIL: "t@example.org" };
const gitIn = (dir) => (...args) => {
  const r = spawnSync("git", args, { cwd: dir, encoding: "utf8", env: gitEnv });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout.trim();
};

/** A repository laid out as the workflow expects, with one commit; and its workflow step, run as the runner runs it. */
function workflowRepo() {
  const script = runBlock(fs.readFileSync(path.join(bundle, "automation/ci/data-gate.yml"), "utf8"), "Gate the data files this change adds or modifies");
  const dir = repo();
  const git = gitIn(dir);
  git("init", "-q");
  git("add", ".");
  git("commit", "-q", "-m", "base");
  const step = (base, cwd = dir, env = {}) => {
    const summary = path.join(dir, "summary.md");
    fs.writeFileSync(summary, "");
    const r = spawnSync("bash", ["-e", "-c", script], { cwd, encoding: "utf8", env: { PATH: process.env.PATH, HOME: process.env.HOME, BASE: base, GITHUB_STEP_SUMMARY: summary, ...env } });
    return { status: r.status, output: r.stdout + r.stderr, summary: fs.readFileSync(summary, "utf8") };
  };
  return { dir, git, step, base: git("rev-parse", "HEAD") };
}

test("ci/data-gate.yml: its run step, in a repository, fails a pull request that adds a bad file and passes one that adds a good one", needsGit, () => {
  assert.match(fs.readFileSync(path.join(bundle, "automation/ci/data-gate.yml"), "utf8"), /pull_request:/);
  const { dir, git, step, base } = workflowRepo();
  const unchanged = step(base);
  assert.equal(unchanged.status, 0, unchanged.output); // nothing changed under data/
  assert.match(unchanged.summary, /no data file changed/);
  fs.writeFileSync(path.join(dir, "data/contacts/2026/january.csv"), clean);
  fs.writeFileSync(path.join(dir, "data/contacts/2026/with space.csv"), clean);
  git("add", ".");
  git("commit", "-q", "-m", "good data");
  const good = step(base);
  const goodHead = git("rev-parse", "HEAD");
  assert.equal(good.status, 0, good.output);
  assert.match(good.summary, /all files pass/);
  assert.match(good.summary, /with space\.csv/);
  fs.writeFileSync(path.join(dir, "data/contacts/2026/february.csv"), dirty);
  git("add", ".");
  git("commit", "-q", "-m", "bad data");
  const bad = step(base);
  assert.equal(bad.status, 1, bad.output);
  assert.match(bad.summary, /february\.csv` .* \*\*fail\*\*/);
  const pushed = step(goodHead);
  assert.equal(pushed.status, 1, pushed.output);
  assert.doesNotMatch(pushed.summary, /january\.csv/, "only the files changed since the base are gated");
});

test("ci/data-gate.yml fails closed: a base git cannot diff against fails the step, with a bad file that would otherwise pass unseen", needsGit, () => {
  const { dir, git, step } = workflowRepo();
  fs.writeFileSync(path.join(dir, "data/contacts/2026/february.csv"), dirty);
  git("add", ".");
  git("commit", "-q", "-m", "bad data");
  // A force-push: the old head is gone from the history the job clones.
  git("checkout", "-q", "-b", "rewritten");
  fs.writeFileSync(path.join(dir, "data/README.md"), "rewritten\n");
  git("commit", "-q", "-am", "to be force-pushed away");
  const lost = git("rev-parse", "HEAD");
  git("checkout", "-q", "-");
  const clone = tempDir();
  gitIn(clone)("clone", "-q", "--no-local", "--single-branch", dir, ".");
  fs.cpSync(path.join(dir, "tools"), path.join(clone, "tools"), { recursive: true });
  fs.copyFileSync(path.join(dir, ".data-gates.json"), path.join(clone, ".data-gates.json"));
  const cases = {
    "the all-zero base of a first push": ["0".repeat(40), dir],
    "no base at all": ["", dir],
    "a commit missing after a force-push": [lost, clone],
    "a commit that never existed": ["1234567".repeat(5) + "89abc", dir],
    "not a commit (a file's blob)": [git("rev-parse", "HEAD:data/README.md"), dir],
    "an option in disguise": [`--output=${path.join(dir, "written-by-git")}`, dir],
  };
  for (const [name, [base, cwd]] of Object.entries(cases)) {
    const result = step(base, cwd);
    assert.notEqual(result.status, 0, `${name}: ${result.output}`);
    assert.equal(result.status, 2, `${name}: ${result.output}`);
    assert.match(result.summary, /## Data gate: FAILED/, name);
    assert.match(result.output, /cannot tell which files changed|has no commit/, name);
  }
  assert.ok(!fs.existsSync(path.join(dir, "written-by-git")), "a base is never passed to git as an option");
  // Outside a repository, git itself fails: so does the step.
  const bare = repo();
  const outside = step("HEAD~1", bare, { GIT_CEILING_DIRECTORIES: path.dirname(bare) });
  assert.equal(outside.status, 2, outside.output);
});

test("gate-incoming --changed-since gates only what changed, names and all; without paths it refuses rather than passing nothing", needsGit, () => {
  const { dir, git, base } = workflowRepo();
  fs.writeFileSync(path.join(dir, "data/contacts/2026/naïve – “quoted” name.csv"), clean);
  fs.writeFileSync(path.join(dir, "data/contacts/2026/new\nline.csv"), clean);
  git("add", ".");
  git("commit", "-q", "-m", "odd names");
  const result = node("automation/gate-incoming.mjs", ["--gates", ".data-gates.json", "--changed-since", base, "data/"], { cwd: dir });
  assert.equal(result.status, 0, result.stderr);
  assert.deepEqual(result.json.files.map((f) => f.file).sort(), ["data/contacts/2026/naïve – “quoted” name.csv", "data/contacts/2026/new\nline.csv"]);
  const none = node("automation/gate-incoming.mjs", ["--gates", ".data-gates.json", "--changed-since", base], { cwd: dir });
  assert.equal(none.status, 2, none.stdout);
  const noValue = node("automation/gate-incoming.mjs", ["--gates", ".data-gates.json", "data/", "--changed-since"], { cwd: dir });
  assert.equal(noValue.status, 2, noValue.stdout);
});
