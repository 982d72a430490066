/**
 * research-brief: time from the 202 to a delivered brief (held payment settled, result shown), with
 * the stand-ins on 127.0.0.1, against the research pipeline alone on the same inputs in the same run
 * (the reference: what the queue, the worker and settling the held payment add).
 *
 * Two setups: the keyless default (Wikipedia and Crossref stand-ins replaying recorded answers,
 * extractive brief) and a web search with pages and a model (SearXNG-, page- and OpenAI-shaped
 * stand-ins). Briefs are asked one after another, so each time is one brief's latency.
 */
import pino from "pino";
import { devPrivateKey } from "../src/chain/dev-accounts.ts";
import { createPayer } from "../src/client/paying-fetch.ts";
import { loadConfig } from "../src/config.ts";
import { researchBrief } from "../src/operations/research-brief/index.ts";
import { createChatModel } from "../src/operations/research-brief/model.ts";
import { runResearch } from "../src/operations/research-brief/pipeline.ts";
import { DEFAULT_RETRY } from "../src/operations/research-brief/retry.ts";
import { safeFetch } from "../src/operations/research-brief/safe-fetch.ts";
import { ResearchBriefRequest } from "../src/operations/research-brief/schema.ts";
import { createSearchProviders } from "../src/operations/research-brief/search.ts";
import { jsonPost, startTestService } from "../test/helpers/service.ts";
import { QUESTION, researchEnv, startStandIns } from "../test/operations/research-brief-standins.ts";
import { startSourceStandIns } from "../test/operations/research-sources-standins.ts";
import { type BenchRow, report } from "./lib.ts";

const BRIEFS = Number(process.env.BENCH_BRIEFS ?? 20);
const KEYLESS_QUESTION = "What is the Python programming language used for in ecological research?";

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number;
};

async function pollDelivered(statusUrl: string): Promise<void> {
  for (;;) {
    const job = await (await fetch(statusUrl)).json();
    if (job.status === "succeeded" && job.payment?.state === "settled") return;
    if (job.status === "failed") throw new Error(`a benchmark brief failed: ${JSON.stringify(job.error)}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

async function measure(setup: string, env: Record<string, string>, question: string): Promise<BenchRow> {
  const service = await startTestService(env, { operations: [researchBrief] });
  try {
    const payer = createPayer(devPrivateKey(4));
    const request = { question, requiredSources: 3, maxWords: 300 };

    // The reference: the same pipeline, same providers, called directly.
    const config = loadConfig({ ...env, PORT: "1", LOG_LEVEL: "silent" });
    const deps = {
      search: createSearchProviders(config.research.search),
      model: config.research.llm ? createChatModel(config.research.llm) : undefined,
      fetchPage: (url: string, signal: AbortSignal) =>
        safeFetch(url, { allowHosts: config.research.fetchAllowHosts, signal }),
      now: () => new Date(),
      retry: DEFAULT_RETRY,
    };
    const pipeline: number[] = [];
    const delivered: number[] = [];
    for (let i = 0; i < BRIEFS + 2; i++) {
      const started = performance.now();
      await runResearch(ResearchBriefRequest.parse(request), deps, {
        signal: new AbortController().signal,
        progress: async () => {},
        log: pino({ level: "silent" }),
      });
      if (i >= 2) pipeline.push(performance.now() - started);

      const accepted = await payer.fetch(`${service.url}/v1/research-brief`, jsonPost(request));
      if (accepted.status !== 202) throw new Error(`expected 202, got ${accepted.status}`);
      const { statusUrl } = await accepted.json();
      const at202 = performance.now();
      await pollDelivered(statusUrl);
      if (i >= 2) delivered.push(performance.now() - at202);
    }
    const p50 = percentile(delivered, 50);
    const reference = percentile(pipeline, 50);
    return {
      setup,
      briefs: BRIEFS,
      "202→delivered p50 ms": Math.round(p50),
      "202→delivered p95 ms": Math.round(percentile(delivered, 95)),
      "pipeline alone p50 ms": Math.round(reference),
      "pipeline alone p95 ms": Math.round(percentile(pipeline, 95)),
      "delivered / pipeline (p50)": Number((p50 / reference).toFixed(2)),
    };
  } finally {
    await service.stop();
  }
}

const rows: BenchRow[] = [];
const sources = await startSourceStandIns();
try {
  rows.push(
    await measure(
      "keyless: Wikipedia + Crossref, extractive",
      { RESEARCH_WIKIPEDIA_URL: sources.wikipediaUrl, RESEARCH_CROSSREF_URL: sources.crossrefUrl },
      KEYLESS_QUESTION,
    ),
  );
} finally {
  await sources.stop();
}
const web = await startStandIns();
try {
  rows.push(await measure("SearXNG + pages + model", researchEnv(web), QUESTION));
} finally {
  await web.stop();
}
report("research-brief", rows, {
  method:
    "one brief at a time, the same request each time (2 warm-up rounds); 202→delivered is from the 202 " +
    "to the first poll (every 10 ms) showing status succeeded with the held payment settled; the " +
    "reference is runResearch called directly with the same providers in the same process.",
  loadAverage: (await import("node:os")).loadavg(),
});
