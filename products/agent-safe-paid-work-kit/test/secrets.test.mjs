// The secret scan: the formats real scanners know, and never a transaction hash or a digest.
// Token-shaped strings are assembled at run time, so this file holds none.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { scanSecrets } from "../lib/secrets.mjs";
import { run, tempDir } from "./helpers.mjs";
import { generator, LOOKALIKE_FORMATS, placements, SECRET_FORMATS } from "./support/secret-corpus.mjs";

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
  // The cases a buyer found missed (issue 32), each by the rule that must name it.
  "AWS secret in the AWS CLI's JSON": `{ "Credentials": { "AccessKeyId": "${"ASIA"}${chars(16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")}", "SecretAccessKey": "${chars(40, `${ALNUM}/+`, 5)}" } }`,
  "a wallet key passed to a wallet constructor": `const wallet = new Wallet("0x${hex64}", provider);`,
  "a deployer's key in a .env file": `DEPLOYER=0x${hex64}`,
  "a Stripe webhook secret": `STRIPE_WEBHOOK_SECRET=${"whsec"}_${chars(32)}`,
  "a Slack app-level token": `${"xapp"}-1-A${chars(10, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")}-1234567890123-${chars(64, "0123456789abcdef")}`,
  "an npm token": `//registry.example/:_authToken=${"npm"}_${chars(36)}`,
  "a Hugging Face token": `HF_TOKEN=${"hf"}_${chars(34, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")}`,
  "a database URL with a password": `DATABASE_URL=postgres://app:${chars(16)}@db.internal:5432/app`,
};

const expected = {
  "AWS secret in the AWS CLI's JSON": "AWS key pair",
  "a wallet key passed to a wallet constructor": "hex private key",
  "a deployer's key in a .env file": "hex private key",
  "a Stripe webhook secret": "Stripe webhook secret",
  "a Slack app-level token": "Slack app-level token",
  "an npm token": "npm token",
  "a Hugging Face token": "Hugging Face token",
  "a database URL with a password": "password in a URL",
};
for (const [name, rule] of Object.entries(expected)) {
  test(`named as it should be: ${name}`, () => assert.ok(rules(secrets[name]).includes(rule), rules(secrets[name]).join(", ")));
}

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

// ---- the generated corpus: every format in every place, and the look-alikes in the same places ----

const SEED = Number(process.env.SECRET_CORPUS_SEED ?? Math.floor(Math.random() * 2 ** 32));
const PER_FORMAT = Number(process.env.SECRET_CORPUS_SIZE ?? 25);

/** Scans `PER_FORMAT` values of each format in each place: per format, the cases and the misses. */
function sweep(formats, seed) {
  const r = generator(seed);
  return formats.map((format) => {
    const outcome = { format: format.name, cases: 0, hits: 0, misses: [], flagged: [], places: {} };
    for (let i = 0; i < PER_FORMAT; i++) {
      const value = format.make(r);
      for (const { context, text } of placements(format, value, r)) {
        outcome.cases++;
        const findings = scanSecrets(text);
        outcome.places[context] ??= { cases: 0, hits: 0 };
        outcome.places[context].cases++;
        outcome.places[context].hits += findings.length > 0 ? 1 : 0;
        if (findings.length > 0) outcome.hits++;
        if (findings.length === 0) outcome.misses.push({ context, text });
        else outcome.flagged.push({ context, text, findings });
      }
    }
    return outcome;
  });
}

/** A generated document as a failure message shows it: NULs (of UTF-16) dropped, cut short. */
const shown = (text) => JSON.stringify(text.replaceAll("\0", "").slice(0, 300));
const table = (rows, column) => rows.map((row) => `  ${row.format.padEnd(40)} ${String(row.cases).padStart(5)} cases  ${column(row)}`);

test(`generated corpus (seed ${SEED}; replay with SECRET_CORPUS_SEED=${SEED}): every real format found in every place`, (t) => {
  const rows = sweep(SECRET_FORMATS, SEED);
  t.diagnostic(`secret corpus, seed ${SEED}, ${PER_FORMAT} values a format: recall per format`);
  for (const line of table(rows, (row) => `${String(row.hits).padStart(5)} found  recall ${((100 * row.hits) / row.cases).toFixed(1)}%`)) t.diagnostic(line);
  const places = {};
  for (const row of rows) {
    for (const [context, { cases, hits }] of Object.entries(row.places)) {
      places[context] ??= { format: context, cases: 0, hits: 0 };
      places[context].cases += cases;
      places[context].hits += hits;
    }
  }
  t.diagnostic("recall per place");
  for (const line of table(Object.values(places), (row) => `${String(row.hits).padStart(5)} found  recall ${((100 * row.hits) / row.cases).toFixed(1)}%`)) t.diagnostic(line);
  const missed = rows.filter((row) => row.misses.length > 0);
  const total = rows.reduce((sum, row) => sum + row.cases, 0);
  t.diagnostic(`total: ${total - missed.reduce((sum, row) => sum + row.misses.length, 0)} of ${total} found`);
  assert.deepEqual(
    missed.map((row) => `${row.format}: ${row.misses.length} missed, e.g. in ${row.misses[0].context}: ${shown(row.misses[0].text)}`),
    [],
    `seed ${SEED}`,
  );
});

test(`generated corpus (seed ${SEED}): no look-alike is reported as a secret`, (t) => {
  const rows = sweep(LOOKALIKE_FORMATS, SEED);
  t.diagnostic(`look-alike corpus, seed ${SEED}, ${PER_FORMAT} values a format: false positives per format`);
  for (const line of table(rows, (row) => `${String(row.flagged.length).padStart(5)} false positives`)) t.diagnostic(line);
  const flagged = rows.filter((row) => row.flagged.length > 0);
  assert.deepEqual(
    flagged.map((row) => `${row.format}: ${row.flagged.length} flagged, e.g. in ${row.flagged[0].context} as ${row.flagged[0].findings.map((f) => f.rule).join(", ")}: ${shown(row.flagged[0].text)}`),
    [],
    `seed ${SEED}`,
  );
});

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

test("a UTF-16 file and a base64-encoded .env file are scanned as the text they hold, on the right line", () => {
  const env = `# deploy\nNODE_ENV=production\nDEPLOYER=0x${hex64}\n`;
  for (const bytes of [Buffer.from(`\ufeff${env}`, "utf16le"), Buffer.from(`\ufeff${env}`, "utf16le").swap16(), Buffer.from(env, "utf16le")]) {
    // As the bytes, and as the deliverable gate reads a file (as UTF-8).
    for (const input of [bytes, bytes.toString("utf8")]) assert.deepEqual(scanSecrets(input).map((f) => [f.rule, f.line]), [["hex private key", 3]]);
  }
  const encoded = `note\n${Buffer.from(env).toString("base64").replace(/.{76}/g, "$&\n")}\n`;
  assert.deepEqual(scanSecrets(encoded).map((f) => [f.rule, f.line]), [["hex private key (base64-encoded)", 2]]);
  const twice = `ENV_B64=${Buffer.from(Buffer.from(env).toString("base64")).toString("base64")}`;
  assert.deepEqual(rules(twice), ["hex private key (base64-encoded)"]);
  assert.ok(!JSON.stringify(scanSecrets(encoded)).includes(hex64), "the finding does not repeat the key");
});

test("the deliverable gate refuses a UTF-16 file and a base64-encoded .env file that hold a key", () => {
  const spec = path.join(tempDir(), "spec.json");
  fs.writeFileSync(spec, JSON.stringify({ noSecrets: true }));
  for (const [file, data] of [
    ["notes-utf16.txt", Buffer.from(`\ufeffok\n${secrets["a Hugging Face token"]}\n`, "utf16le")],
    ["env.b64", Buffer.from(Buffer.from(`${secrets["a deployer's key in a .env file"]}\n`).toString("base64"))],
  ]) {
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, file), data);
    const result = run("gates/deliverable-gate.mjs", [dir, "--spec", spec]);
    assert.equal(result.status, 1, result.stdout);
    assert.ok(result.json.checks.some((c) => !c.ok && c.check.startsWith(`${file} holds no `)), result.stdout);
  }
});

test("the scan stays linear: 5 MB of prose and hex in well under a few seconds", () => {
  const text = `${"word ".repeat(400_000)}${`0x${hex64} `.repeat(40_000)}`;
  const started = process.hrtime.bigint();
  assert.deepEqual(scanSecrets(text), []);
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  assert.ok(ms < 5000, `${ms} ms`);
});
