// The secret scan: the formats real scanners know, and never a transaction hash or a digest.
// Token-shaped strings are assembled at run time, so this file holds none.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { scanSecrets } from "../lib/secrets.mjs";
import { run, tempDir } from "./helpers.mjs";

const ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const chars = (n, alphabet = ALNUM, seed = 7) => Array.from({ length: n }, (_, i) => alphabet[(i * 31 + seed) % alphabet.length]).join("");
const hex64 = createHash("sha256").update("a key").digest("hex");
const rules = (text) => scanSecrets(text).map((f) => f.rule);

const secrets = {
  "GitHub token": `token: ${"ghp"}_${chars(36)}`,
  "GitHub OAuth token": `${"gho"}_${chars(36)}`,
  "GitHub fine-grained token": `GH_TOKEN=${"github"}_pat_${chars(22)}_${chars(59, ALNUM, 3)}`,
  "OpenAI API key": `OPENAI_API_KEY=${"sk"}-proj-${chars(74)}${"T3Blbk"}FJ${chars(74, ALNUM, 5)}`,
  "OpenAI legacy key": `${"sk"}-${chars(20)}${"T3Blbk"}FJ${chars(20, ALNUM, 9)}`,
  "Anthropic API key": `ANTHROPIC_API_KEY=${"sk"}-ant-api03-${chars(93, `${ALNUM}_-`)}AA`,
  "Slack bot token": `${"xoxb"}-123456789012-1234567890123-${chars(24)}`,
  "Slack user token": `${"xoxp"}-123456789012-123456789012-123456789012-${chars(32, "0123456789abcdef")}`,
  "Slack webhook": `https://hooks.slack.com/services/T${chars(8, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")}/B${chars(8, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", 2)}/${chars(24)}`,
  "Stripe live key": `${"sk"}_live_${chars(24)}`,
  "Stripe restricted key": `${"rk"}_live_${chars(24)}`,
  "AWS key pair": `aws_access_key_id = ${"AKIA"}${chars(16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")}\naws_secret_access_key = ${chars(40, `${ALNUM}/+`)}`,
  "PEM RSA key": `-----BEGIN RSA ${"PRIVATE"} KEY-----\nMIIE...\n-----END RSA PRIVATE KEY-----`,
  "PEM OpenSSH key": `-----BEGIN OPENSSH ${"PRIVATE"} KEY-----`,
  "PEM PKCS8 key": `-----BEGIN ${"PRIVATE"} KEY-----`,
  "labelled hex key (env)": `X402_SETTLER_PRIVATE_KEY=0x${hex64}`,
  "labelled hex key (JSON)": `{ "privateKey": "0x${hex64}" }`,
  "labelled hex key (prose)": `key: 0x${hex64}`,
  "labelled hex key (no 0x)": `signer key = ${hex64}`,
  "mnemonic": `mnemonic: ${"test ".repeat(11)}junk`,
};

for (const [name, text] of Object.entries(secrets)) {
  test(`found: ${name}`, () => assert.notDeepEqual(rules(text), [], text));
}

test("an AWS access key ID with its secret is reported as a key pair", () => {
  assert.ok(rules(secrets["AWS key pair"]).includes("AWS key pair"));
});

const harmless = {
  "a transaction hash": `Settled in transaction 0x${hex64}.`,
  "a labelled transaction": `{ "transaction": "0x${hex64}", "txHash": "0x${hex64}", "blockHash": "0x${hex64}" }`,
  "a digest": `sha256: ${hex64}\ndigest = 0x${hex64}\nETag: "${hex64}"`,
  "sha256sum output": `${hex64}  report.md\n${hex64}  data.json\n`,
  "other labelled hashes": `cache_key: ${hex64}\nidempotency_key=${hex64}\nnonce: 0x${hex64}\nmanifestSha256: ${hex64}`,
  "a bare hex string": `0x${hex64}`,
  "AWS's documented example key": `aws_access_key_id = AKIAIOSFODNN7EXAMPLE\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY`,
  "words that look like prefixes": "ask-me anything; a risk_live_ value; ghp_short; xoxb-; sk-ant-; the key: ownership",
  "a public address": "payTo: 0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
};
for (const [name, text] of Object.entries(harmless)) {
  test(`not a secret: ${name}`, () => assert.deepEqual(rules(text), []));
}

test("the deliverable gate names the secret and its line, and accepts a report full of hashes", () => {
  const dir = tempDir();
  fs.writeFileSync(path.join(dir, "report.md"), `# Report\nSettled: 0x${hex64}\n${hex64}  data.json\n`);
  const spec = path.join(tempDir(), "spec.json");
  fs.writeFileSync(spec, JSON.stringify({ noSecrets: true }));
  assert.equal(run("gates/deliverable-gate.mjs", [dir, "--spec", spec]).status, 0);
  fs.writeFileSync(path.join(dir, "notes.txt"), `ok\n${secrets["GitHub token"]}\n${secrets["Slack bot token"]}\n`);
  const result = run("gates/deliverable-gate.mjs", [dir, "--spec", spec]);
  assert.equal(result.status, 1);
  const failed = result.json.checks.filter((c) => !c.ok);
  assert.deepEqual(failed.map((c) => c.check), ["notes.txt holds no GitHub token", "notes.txt holds no Slack token", "no secrets found"]);
  assert.match(failed[0].detail, /^line 2: /);
  assert.ok(!result.stdout.includes(chars(36)), "the report does not repeat the secret");
});

test("the scan stays linear: 5 MB of prose and hex in well under a few seconds", () => {
  const text = `${"word ".repeat(400_000)}${`0x${hex64} `.repeat(40_000)}`;
  const started = process.hrtime.bigint();
  assert.deepEqual(scanSecrets(text), []);
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  assert.ok(ms < 5000, `${ms} ms`);
});
