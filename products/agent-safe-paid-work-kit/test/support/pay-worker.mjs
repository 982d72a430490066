// Child process of guard.test.mjs ("two processes sharing one ledger"): pays `count` calls to a
// seller through a guarded client and prints what happened as JSON. Does nothing without arguments
// (the test runner may load it as a test file).
import { guardClient, recordReceipts } from "../../lib/budget-guard.mjs";
import { MiniX402Client, miniWrapFetch } from "./mini-x402.mjs";

const [url, ledgerPath, policyJson, count, startAt] = process.argv.slice(2);
if (url) {
  // Start together with the other process, so that the two really race.
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, Number(startAt) - Date.now())));
  const client = guardClient(new MiniX402Client(), { policy: JSON.parse(policyJson), ledgerPath });
  const pay = miniWrapFetch(recordReceipts(fetch, client), client);
  const results = await Promise.allSettled(Array.from({ length: Number(count) }, () => pay(url)));
  process.stdout.write(JSON.stringify(results.map((r) => (r.status === "fulfilled" ? r.value.status : r.reason.message))));
}
