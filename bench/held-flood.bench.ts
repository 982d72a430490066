/**
 * held-flood (issue 33): a paying customer's research brief, from sending the paid request to the brief
 * delivered with its held payment settled, right after a flood, against the same brief on a quiet service
 * (the same service, before any flood). Goal: after a flood ≤ 3× quiet (p50).
 *
 * The flood is the attack: two fresh wallets passing the same 5 USDC between them on chain, 30
 * briefs fired at once from the first, the 5 USDC transferred to the second while they are answered, 30
 * fired from the second; the customer's brief is sent as soon as the second flood is answered. Keyless briefs (Wikipedia and Crossref stand-ins
 * replaying recorded answers), on the local chain, 2 workers, a cap of 3 held briefs per payer.
 */
import { generatePrivateKey } from "viem/accounts";
import { devPrivateKey } from "../src/chain/dev-accounts.ts";
import { fundLocalAccounts } from "../src/chain/local-chain.ts";
import { createPayer, type Payer } from "../src/client/paying-fetch.ts";
import { researchBrief } from "../src/operations/research-brief/index.ts";
import { fireAtOnce, pollUntilFinished } from "../test/helpers/floods.ts";
import { jsonPost, startTestService, usdcBalances, usdcSender } from "../test/helpers/service.ts";
import { startSourceStandIns } from "../test/operations/research-sources-standins.ts";
import { type BenchRow, report } from "./lib.ts";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const FLOOD = 30;
const PRICE = 5_000_000n;
const request = {
  question: "What is the Python programming language used for in ecological research?",
  requiredSources: 2,
  maxWords: 300,
};

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)] as number;
};

const sources = await startSourceStandIns();
const service = await startTestService(
  {
    RESEARCH_WIKIPEDIA_URL: sources.wikipediaUrl,
    RESEARCH_CROSSREF_URL: sources.crossrefUrl,
    JOB_MAX_HELD_PER_PAYER: "3",
    WORKER_CONCURRENCY: "2",
  },
  { operations: [researchBrief] },
);
try {
  const url = `${service.url}/v1/research-brief`;
  const rpcUrl = service.localChain?.rpcUrl as string;
  const customer = createPayer(devPrivateKey(4));
  const balanceOf = usdcBalances(rpcUrl);

  /** Milliseconds from sending the customer's paid brief to seeing it delivered and its payment settled. */
  async function customerBrief(): Promise<number> {
    const started = performance.now();
    const accepted = await customer.fetch(url, jsonPost(request));
    if (accepted.status !== 202) throw new Error(`the customer's brief: ${accepted.status}`);
    const job = await pollUntilFinished((await accepted.json()).statusUrl, 10);
    if (job.status !== "succeeded" || job.payment?.state !== "settled") {
      throw new Error(`the customer's brief was not delivered: ${JSON.stringify(job.error ?? job.payment)}`);
    }
    return performance.now() - started;
  }

  async function wallet(usdc: bigint): Promise<Payer & { send: ReturnType<typeof usdcSender> }> {
    const key = generatePrivateKey();
    const payer = createPayer(key);
    await fundLocalAccounts(rpcUrl, [{ address: payer.address, usdc, ether: 10n ** 18n }]);
    return Object.assign(payer, { send: usdcSender(rpcUrl, key) });
  }

  await customerBrief(); // warm-up
  const quiet: number[] = [];
  for (let i = 0; i < ROUNDS; i++) quiet.push(await customerBrief());

  const afterFlood: number[] = [];
  const accepted: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const [first, second] = [await wallet(PRICE), await wallet(0n)];
    // The first wallet passes the money on while its flood is being answered, as the attacker did.
    const firstFlood = fireAtOnce(url, request, first, FLOOD);
    const left = await balanceOf(first.address);
    if (left > 0n) await first.send(second.address, left);
    const answers = [...(await firstFlood), ...(await fireAtOnce(url, request, second, FLOOD))];
    afterFlood.push(await customerBrief());
    const jobs = answers.filter((answer) => answer.status === 202);
    accepted.push(jobs.length);
    await Promise.all(jobs.map((answer) => pollUntilFinished(answer.body.statusUrl)));
  }

  const ratio = median(afterFlood) / median(quiet);
  const rows: BenchRow[] = [
    {
      setup: "quiet service",
      rounds: ROUNDS,
      "sent→delivered p50 ms": Math.round(median(quiet)),
      "sent→delivered max ms": Math.round(Math.max(...quiet)),
    },
    {
      setup: `after ${FLOOD}+${FLOOD} briefs from two wallets passing 5 USDC`,
      rounds: ROUNDS,
      "sent→delivered p50 ms": Math.round(median(afterFlood)),
      "sent→delivered max ms": Math.round(Math.max(...afterFlood)),
      "flood jobs accepted (per round)": accepted.join(" "),
    },
  ];
  report("held-flood", rows, {
    "after flood / quiet (p50)": Number(ratio.toFixed(2)),
    goal: "≤ 3",
    method:
      "one service, keyless briefs; the quiet rounds first (after one warm-up), then each round: two fresh " +
      "wallets, 30 briefs at once from the one holding 5 USDC and, while they are answered, an on-chain transfer " +
      "of what it still holds to the other, then 30 at once from the other, then the customer's brief (x402 client: 402, sign, paid request), polled " +
      "every 10 ms until delivered with its payment settled; the flood's jobs finish before the next round.",
    loadAverage: (await import("node:os")).loadavg(),
  });
} finally {
  await service.stop();
  await sources.stop();
}
