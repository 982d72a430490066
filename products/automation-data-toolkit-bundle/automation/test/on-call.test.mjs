// The on-call page: every runbook of both kits joined into it, current, and every command in it
// (and in the other templates) naming a file that exists in the bundle.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { bundle, node } from "./helpers.mjs";

const page = fs.readFileSync(path.join(bundle, "automation/ON-CALL.md"), "utf8");
const runbooks = ["agent-safe-paid-work-kit", "csv-json-quality-toolkit"].flatMap((kit) =>
  fs.readdirSync(path.join(bundle, kit, "runbooks")).map((name) => path.join(bundle, kit, "runbooks", name)),
);

test("ON-CALL.md is current with the runbooks (else: node automation/make-oncall.mjs)", () => {
  const result = node("automation/make-oncall.mjs", ["--check"]);
  assert.equal(result.status, 0, result.stdout);
});

test("every runbook of both kits is a section of the page", () => {
  assert.ok(runbooks.length >= 5);
  for (const file of runbooks) {
    const title = fs.readFileSync(file, "utf8").match(/^# (.+)$/m)[1];
    assert.ok(page.includes(`\n## ${title}\n`), title);
  }
});

test("every triage link points at a section", () => {
  const slugs = new Set([...page.matchAll(/^#+ (.+)$/gm)].map((m) => m[1].toLowerCase().replace(/[^\w\s-]/g, "").replace(/\s/g, "-")));
  const links = [...page.matchAll(/\]\(#([^)]+)\)/g)].map((m) => m[1]);
  assert.ok(links.length >= 5);
  for (const link of links) assert.ok(slugs.has(link), link);
});

test("every `node <script>` in the page and the templates runs a file of the bundle", () => {
  const texts = [page, ...["ci/data-gate.yml", "ci/paid-cleanup.yml", "schedule/paid-cleanup.crontab"].map((f) => fs.readFileSync(path.join(bundle, "automation", f), "utf8"))];
  const scripts = texts.flatMap((t) => [...t.matchAll(/\bnode ([\w./-]+\.mjs)/g)].map((m) => m[1].replace(/^tools\/automation-data-toolkit-bundle\//, "")));
  assert.ok(scripts.length >= 10, scripts.join(" "));
  for (const script of scripts) assert.ok(fs.existsSync(path.join(bundle, script)), script);
});

test("the CHANGELOG's newest section names the version of each kit the bundle carries", () => {
  const newest = fs.readFileSync(path.join(bundle, "CHANGELOG.md"), "utf8").split(/^## /m)[1];
  for (const kit of ["agent-safe-paid-work-kit", "csv-json-quality-toolkit"]) {
    const { version } = JSON.parse(fs.readFileSync(path.join(bundle, kit, "package.json"), "utf8"));
    assert.ok(newest.includes(`${kit} ${version}`), `${kit} ${version}`);
  }
});
