#!/usr/bin/env node
// A scheduled job: pay a CSV cleanup service (utility402's POST /v1/csv-cleanup, or any seller
// with the same contract) through the budget guard, write the cleaned file, and gate the result
// before anything downstream uses it. Meant for cron (schedule/paid-cleanup.crontab) or a CI
// schedule (ci/paid-cleanup.yml).
//
// usage: X402_PRIVATE_KEY=0x… node automation/paid-cleanup.mjs --input in.csv --out cleaned.csv
//          --url https://…/v1/csv-cleanup --policy policy.json --ledger ledger.jsonl --gate gate.json
//          [--keys email,id] [--report report.json]
// Needs @x402/fetch, @x402/evm, @x402/extensions and viem at the versions automation/package-lock.json pins: run
// `npm ci --ignore-scripts` in automation/ once (the bundle's only install, for this job alone).
// exit 0 paid and the result passes its gate; 1 paid, but the result fails its gate (keep the
//   report: runbooks/disputed-deliverable.md); 2 wrong call; 3 needs a human's approval (nothing
//   signed); 4 refused by the spend policy (nothing signed); 5 the seller failed (see the ledger:
//   a signed payment without a receipt counts until the chain shows it unused;
//   runbooks/failed-settlement.md)
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { foldLedger, guardClient, readLedger, recordReceipts } from "../agent-safe-paid-work-kit/lib/index.mjs";
import { parseCsv, toCsv } from "../csv-json-quality-toolkit/lib/csv.mjs";

export const EXIT = { ACCEPTED: 0, REJECTED: 1, USAGE: 2, APPROVAL: 3, REFUSED: 4, SELLER: 5 };
const QUALITY_GATE = path.resolve(import.meta.dirname, "../csv-json-quality-toolkit/gates/quality-gate.mjs");

/**
 * One run. `pay` is a paying fetch built on a GUARDED x402 client (guardClient) over a fetch
 * that records receipts (recordReceipts; see payingFetch). Returns
 * { code, report }; writes `out` only when the seller answered with rows.
 */
export async function runPaidCleanup({ input, out, url, pay, gate, ledgerPath, keys }) {
  const { records, problems } = parseCsv(fs.readFileSync(input, "utf8"));
  const report = { at: new Date().toISOString(), input, out, url, inputRows: records.length };
  if (problems.length > 0) return { code: EXIT.USAGE, report: { ...report, error: `${input} does not parse: ${JSON.stringify(problems.slice(0, 3))}` } };
  const seen = new Set(foldLedger(readLedger(ledgerPath)).map((r) => r.id));
  let response;
  try {
    response = await pay(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ rows: records, ...(keys ? { keyColumns: keys } : {}) }),
    });
  } catch (error) {
    const message = String(error?.message ?? error);
    // Refused by the guard's policy, or by the x402 client's own spendControls: nothing was signed.
    const refused = /spend policy:|spendControls/.test(message);
    return { code: refused ? (/ask a human/.test(message) ? EXIT.APPROVAL : EXIT.REFUSED) : EXIT.SELLER, report: { ...report, error: message } };
  }
  report.payment = foldLedger(readLedger(ledgerPath)).find((r) => !seen.has(r.id)) ?? null;
  report.status = response.status;
  const body = await response.text();
  let result;
  try {
    result = JSON.parse(body);
  } catch {}
  if (response.status !== 200 || !Array.isArray(result?.rows)) {
    return { code: EXIT.SELLER, report: { ...report, error: `the seller answered ${response.status}: ${body.slice(0, 300)}` } };
  }
  const columns = Array.isArray(result.columns) ? result.columns : [...new Set(result.rows.flatMap((row) => Object.keys(row ?? {})))];
  fs.writeFileSync(out, toCsv(result.rows, { columns }));
  report.stats = result.stats ?? null;
  const gated = spawnSync(process.execPath, [QUALITY_GATE, out, "--gate", gate], { encoding: "utf8" });
  try {
    report.gate = JSON.parse(gated.stdout);
  } catch {
    report.gate = { pass: false, error: gated.stderr.trim() };
  }
  return { code: gated.status === 0 ? EXIT.ACCEPTED : EXIT.REJECTED, report };
}

/**
 * The paying fetch of a guarded client. The receipts are read on the fetch below the x402 one
 * (recordReceipts): @x402/core runs no onPaymentResponse hook for x402 v1 sellers, whose
 * payments would otherwise stay `signed` (counted, never shown as settled).
 */
function payingFetch(x402, client) {
  return x402.wrapFetchWithPayment(recordReceipts(fetch, client), client);
}

async function main(argv) {
  const options = {};
  for (let i = 0; i < argv.length; i += 2) {
    if (!argv[i].startsWith("--") || argv[i + 1] === undefined) return usage(`unexpected ${argv[i]}`);
    options[argv[i].slice(2)] = argv[i + 1];
  }
  const missing = ["input", "out", "url", "policy", "ledger", "gate"].filter((name) => !options[name]);
  if (missing.length > 0) return usage(`missing --${missing.join(", --")}`);
  for (const name of ["input", "policy", "gate"]) if (!fs.existsSync(options[name])) return usage(`--${name} ${options[name]} does not exist`);
  const key = process.env.X402_PRIVATE_KEY;
  if (!/^0x[0-9a-fA-F]{64}$/.test(key ?? "")) return usage("X402_PRIVATE_KEY (0x + 64 hex) must be set in the environment");
  let x402;
  try {
    const [fetchModule, evm, accounts] = await Promise.all([import("@x402/fetch"), import("@x402/evm/exact/client"), import("viem/accounts")]);
    x402 = { ...fetchModule, ...evm, ...accounts };
  } catch {
    return usage("@x402/fetch, @x402/evm, @x402/extensions and viem are needed: run `npm ci --ignore-scripts` in the bundle's automation/ folder");
  }
  const x402client = x402.registerExactEvmScheme(new x402.x402Client(), { signer: x402.privateKeyToAccount(key) });
  // The client's own default cap is $1 a payment (a cleanup costs $2): the spend policy is the limit here.
  x402client.setSpendControls?.({ maxAmountPerPayment: false });
  const client = guardClient(x402client, {
    policy: JSON.parse(fs.readFileSync(options.policy, "utf8")),
    ledgerPath: options.ledger,
    // The guard checks a seller's signed offers with the package pinned here (its own folder cannot see it).
    offerVerifier: () => import("@x402/extensions/offer-receipt"),
  });
  const { code, report } = await runPaidCleanup({
    input: options.input,
    out: options.out,
    url: options.url,
    pay: payingFetch(x402, client),
    gate: options.gate,
    ledgerPath: options.ledger,
    keys: options.keys?.split(","),
  });
  const text = `${JSON.stringify({ code, ...report }, null, 2)}\n`;
  if (options.report) fs.writeFileSync(options.report, text);
  process.stdout.write(text);
  return code;
}

function usage(message) {
  process.stderr.write(`paid-cleanup: ${message}\n`);
  return EXIT.USAGE;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exitCode = await main(process.argv.slice(2));
}
