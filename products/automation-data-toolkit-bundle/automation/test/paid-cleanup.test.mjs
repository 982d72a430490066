// The scheduled paid cleanup: pays a csv-cleanup seller through the kit's guard, writes the result
// and gates it. The seller is local and hostile when asked to be; the client is the kit's stand-in
// for the x402 client (same hooks), so this runs offline without @x402 installed.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, test } from "node:test";
import { checkPolicy, foldLedger, guardClient, readLedger } from "../../agent-safe-paid-work-kit/lib/index.mjs";
import { MiniX402Client, miniWrapFetch } from "../../agent-safe-paid-work-kit/test/support/mini-x402.mjs";
import { startSeller, USDC } from "../../agent-safe-paid-work-kit/test/support/seller.mjs";
import { EXIT, runPaidCleanup } from "../paid-cleanup.mjs";
import { bundle, node, tempDir } from "./helpers.mjs";

const gate = path.join(bundle, "csv-json-quality-toolkit/schemas/contacts.gate.json");
const INPUT = "id,name,email,country,signed_up\n1, Ada Lovelace ,ada@example.org,GBR,2024-01-15\n2,Grace Hopper,grace@example.org,USA,2024-02-28\n3,Ada L.,ADA@example.org,GBR,2024-01-16\n,,,,\n";

/** The csv-cleanup contract: trim, drop blank rows, keep the first row per key (case-insensitive). */
function cleanup(body, { honest = true } = {}) {
  const { rows, keyColumns } = JSON.parse(body);
  const trimmed = rows.map((row) => Object.fromEntries(Object.entries(row).map(([k, v]) => [k, typeof v === "string" ? v.trim() || null : v])));
  const filled = trimmed.filter((row) => Object.values(row).some((v) => v !== null));
  const seen = new Set();
  const kept = honest
    ? filled.filter((row) => {
        const key = keyColumns.map((k) => String(row[k]).toLowerCase()).join("\u0000");
        return seen.has(key) ? false : seen.add(key);
      })
    : filled;
  return JSON.stringify({ rows: kept, columns: Object.keys(rows[0]), stats: { inputRows: rows.length, outputRows: kept.length } });
}

const sellers = [];
after(() => Promise.all(sellers.map((s) => s.close())));
async function setup({ price = "2000000", honest = true, handler, policy = {} } = {}) {
  const seller = await startSeller({ price: () => price, handler: handler ?? ((body) => cleanup(body, { honest })) });
  sellers.push(seller);
  const dir = tempDir();
  const input = path.join(dir, "export.csv");
  fs.writeFileSync(input, INPUT);
  const ledgerPath = path.join(dir, "ledger.jsonl");
  const client = guardClient(new MiniX402Client(), {
    policy: { version: 1, networks: ["eip155:8453"], assets: [USDC], maxPerPayment: "2000000", maxPerDay: "5000000", ...policy },
    ledgerPath,
  });
  const run = () => runPaidCleanup({ input, out: path.join(dir, "clean.csv"), url: seller.url, pay: miniWrapFetch(fetch, client), gate, ledgerPath, keys: ["email"] });
  return { seller, dir, ledgerPath, run, out: path.join(dir, "clean.csv") };
}

test("paid through the guard, cleaned, gated: exit 0, the payment and the gate report in the run report", async () => {
  const { seller, run, out, ledgerPath } = await setup();
  const { code, report } = await run();
  assert.equal(code, EXIT.ACCEPTED, JSON.stringify(report, null, 2));
  assert.equal(fs.readFileSync(out, "utf8").replaceAll("\r\n", "\n"), "id,name,email,country,signed_up\n1,Ada Lovelace,ada@example.org,GBR,2024-01-15\n2,Grace Hopper,grace@example.org,USA,2024-02-28\n");
  assert.equal(report.gate.pass, true);
  assert.equal(report.payment.state, "settled");
  assert.equal(report.payment.nonce, seller.received[0].payload.authorization.nonce);
  assert.deepEqual(foldLedger(readLedger(ledgerPath)).map((r) => [r.state, r.amount]), [["settled", "2000000"]]);
});

test("a seller that raised its price is refused before signing: exit 4, nothing signed, nothing written", async () => {
  const { seller, run, out } = await setup({ price: "2500000" });
  const { code, report } = await run();
  assert.equal(code, EXIT.REFUSED);
  assert.match(report.error, /exceeds maxPerPayment 2000000/);
  assert.equal(seller.received.length, 0);
  assert.equal(fs.existsSync(out), false);
});

test("above approvalAbove in an unattended job: exit 3, nothing signed", async () => {
  const { seller, run } = await setup({ policy: { approvalAbove: "1000000" } });
  assert.equal((await run()).code, EXIT.APPROVAL);
  assert.equal(seller.received.length, 0);
});

test("the day limit holds across runs: the third $2 run of a $5 day is refused", async () => {
  const { seller, run } = await setup();
  assert.equal((await run()).code, EXIT.ACCEPTED);
  assert.equal((await run()).code, EXIT.ACCEPTED);
  assert.equal((await run()).code, EXIT.REFUSED);
  assert.equal(seller.received.length, 2);
});

test("paid, but the result fails its gate (duplicates kept): exit 1, the paid payment and the failed rules in the report", async () => {
  const { run } = await setup({ honest: false });
  const { code, report } = await run();
  assert.equal(code, EXIT.REJECTED);
  assert.equal(report.payment.state, "settled");
  assert.ok(report.gate.rules.some((r) => !r.ok && r.rule.startsWith("duplicate rate")));
});

test("a seller that answers garbage after payment: exit 5", async () => {
  const { run } = await setup({ handler: () => "<html>oops</html>" });
  const { code, report } = await run();
  assert.equal(code, EXIT.SELLER);
  assert.match(report.error, /the seller answered 200: <html>oops/);
});

test("the command line: wrong calls exit 2 with one line, before anything is paid", () => {
  const dir = tempDir();
  fs.writeFileSync(path.join(dir, "in.csv"), INPUT);
  fs.writeFileSync(path.join(dir, "policy.json"), "{}");
  const args = ["--input", "in.csv", "--out", "o.csv", "--url", "http://127.0.0.1:9/x", "--policy", "policy.json", "--ledger", "l.jsonl", "--gate", gate];
  for (const [argv, message] of [
    [[], /missing --input/],
    [args.slice(0, 4), /missing --url/],
    [args, /X402_PRIVATE_KEY/],
  ]) {
    const result = node("automation/paid-cleanup.mjs", argv, { cwd: dir });
    assert.equal(result.status, 2, result.stdout + result.stderr);
    assert.match(result.stderr, message);
  }
  const schedule = fs.readFileSync(path.join(bundle, "automation/schedule/paid-cleanup.crontab"), "utf8");
  const workflow = fs.readFileSync(path.join(bundle, "automation/ci/paid-cleanup.yml"), "utf8");
  for (const text of [schedule, workflow]) {
    for (const flag of ["--input", "--out", "--url", "--policy", "--ledger", "--gate", "--report"]) assert.ok(text.includes(flag), flag);
    assert.ok(text.includes("automation/paid-cleanup.mjs"));
  }
  assert.match(workflow, /concurrency:\s+group: paid-cleanup/);
});

test("the paid job installs only what automation/package-lock.json pins (exact versions, checksums), with no install scripts", () => {
  const pkg = JSON.parse(fs.readFileSync(path.join(bundle, "automation/package.json"), "utf8"));
  const lock = JSON.parse(fs.readFileSync(path.join(bundle, "automation/package-lock.json"), "utf8"));
  // What paid-cleanup.mjs loads, and nothing else, each at one exact version.
  const loaded = [...fs.readFileSync(path.join(bundle, "automation/paid-cleanup.mjs"), "utf8").matchAll(/import\("((?:@[\w.-]+\/)?[\w-][\w.-]*)/g)].map((m) => m[1]);
  assert.deepEqual(Object.keys(pkg.dependencies).sort(), [...new Set(loaded)].sort());
  for (const [name, version] of Object.entries(pkg.dependencies)) {
    assert.match(version, /^\d+\.\d+\.\d+$/, `${name} is pinned to one version`);
    assert.equal(lock.packages[`node_modules/${name}`]?.version, version, `${name} in the lock`);
  }
  assert.deepEqual(lock.packages[""].dependencies, pkg.dependencies);
  assert.ok(lock.lockfileVersion >= 2);
  const installed = Object.entries(lock.packages).filter(([at]) => at !== "");
  assert.ok(installed.length >= Object.keys(pkg.dependencies).length);
  for (const [at, entry] of installed) assert.match(entry.integrity ?? "", /^sha512-/, `${at} has a checksum`);

  const workflow = fs.readFileSync(path.join(bundle, "automation/ci/paid-cleanup.yml"), "utf8");
  assert.doesNotMatch(workflow, /npm (?:install|i|add)\b/, "nothing installed outside the lock");
  const install = workflow.indexOf("npm ci --ignore-scripts");
  assert.ok(install > 0, "the workflow installs with npm ci --ignore-scripts");
  assert.match(workflow.slice(0, install), /working-directory: tools\/automation-data-toolkit-bundle\/automation\s*\n\s*run: $/);
  assert.ok(install < workflow.indexOf("X402_PRIVATE_KEY:"), "the install step comes before, and without, the key");
  assert.match(fs.readFileSync(path.join(bundle, "automation/schedule/paid-cleanup.crontab"), "utf8"), /npm ci --ignore-scripts/);
});

test("every spend policy the bundle ships is valid, names an rpc for each network (a placeholder host the operator replaces) and its day's time zone", () => {
  const walk = (dir) =>
    fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.name === "node_modules" ? [] : e.isDirectory() ? walk(path.join(dir, e.name)) : [path.join(dir, e.name)]));
  const policies = walk(bundle)
    .filter((file) => file.endsWith(".json") && !file.includes(`${path.sep}test${path.sep}`))
    .map((file) => [path.relative(bundle, file), JSON.parse(fs.readFileSync(file, "utf8"))])
    .filter(([, json]) => json && typeof json === "object" && "maxPerDay" in json);
  assert.deepEqual(policies.map(([file]) => file.split(path.sep).join("/")).sort(), ["agent-safe-paid-work-kit/policy/example-policy.json", "automation/spend-policy.example.json"]);
  for (const [file, policy] of policies) {
    assert.deepEqual(checkPolicy(policy), [], file);
    assert.deepEqual(Object.keys(policy.rpc ?? {}).sort(), [...policy.networks].sort(), `${file}: an rpc per network`);
    for (const url of Object.values(policy.rpc)) assert.match(new URL(url).hostname, /\.example$/, `${file}: ${url} is a placeholder`);
    assert.equal(typeof policy.timeZone, "string", file);
  }
  // The paid cleanup's own policy lets one $2 cleanup a day through, at the seller the templates call.
  const cleanupPolicy = JSON.parse(fs.readFileSync(path.join(bundle, "automation/spend-policy.example.json"), "utf8"));
  const url = fs.readFileSync(path.join(bundle, "automation/ci/paid-cleanup.yml"), "utf8").match(/--url (\S+)/)[1];
  assert.deepEqual(cleanupPolicy.hosts, [new URL(url).hostname]);
  assert.equal(cleanupPolicy.maxPerPayment, "2000000");
});
