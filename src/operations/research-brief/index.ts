import { randomUUID } from "node:crypto";
import type { z } from "zod";
import type { RunJob, StartedOperation } from "../../contract/operation.ts";
import { defineOperation } from "../../contract/operation.ts";
import { POLL_AFTER_SECONDS } from "../../jobs/job-view.ts";
import { livenessSince } from "../../jobs/worker.ts";
import type { OperationEnvironment } from "../../operation-environment.ts";
import { Problem } from "../../problem.ts";
import { createChatModel } from "./model.ts";
import { runResearch } from "./pipeline.ts";
import { ProviderHealth, researchUpstreams, watchedModel, watchedSearch } from "./provider-health.ts";
import { DEFAULT_RETRY } from "./retry.ts";
import { safeFetch } from "./safe-fetch.ts";
import {
  type ResearchBriefInput,
  ResearchBriefRequest,
  ResearchBriefResult,
  ResearchJobAccepted,
} from "./schema.ts";
import { createSearchProviders, searchName } from "./search.ts";

const JOB_TYPE = "research-brief";
const UNAVAILABLE_RETRY_AFTER_SECONDS = "30";

const unavailable = (detail: string) =>
  Problem.of("research-unavailable", `${detail}; no payment was taken`, {
    headers: { "retry-after": UNAVAILABLE_RETRY_AFTER_SECONDS },
  });

type Accepted = z.output<typeof ResearchJobAccepted>;

/**
 * The API side records a paid job and answers 202; the worker side (jobHandler) runs the
 * research. Both sides start from the same configuration (search providers default to the keyless
 * Wikipedia and Crossref APIs), and the API takes a job only while a worker offering it is alive.
 */
async function start(env: OperationEnvironment): Promise<StartedOperation<ResearchBriefInput, Accepted>> {
  const { config, store, log } = env;
  const queue = store.jobs;
  const { search, llm, fetchAllowHosts } = config.research;

  // Upstreams known to be down are a 503 before any payment (a job that cannot succeed is not taken).
  const health = new ProviderHealth({ now: () => env.now().getTime() });
  const upstreams = researchUpstreams(config.research);
  /** The upstreams known to be down now (no probe), as "<name> <reason>". */
  const downNow = () =>
    health
      .status([...upstreams.search, ...(upstreams.model ? [upstreams.model] : [])])
      .filter((status) => !status.available)
      .map((status) => `${status.name} ${status.reason}`);
  const admit = async () => {
    const down = await Promise.all(upstreams.search.map((upstream) => health.unavailable(upstream)));
    if (down.every(Boolean)) throw unavailable(`the search provider is not available: ${down.join("; ")}`);
    const modelDown = upstreams.model && (await health.unavailable(upstreams.model));
    if (modelDown) throw unavailable(`the model is not available: ${modelDown}`);
    const alive = await queue.liveWorkers(livenessSince(env.now().getTime(), config.jobs.leaseMs));
    if (!alive.some((worker) => worker.types.includes(JOB_TYPE))) {
      throw unavailable(
        alive.length > 0
          ? "no live worker has a search provider configured"
          : "no research worker is running",
      );
    }
  };

  const deps = {
    search: watchedSearch(createSearchProviders(search), health, upstreams.search),
    model: llm && upstreams.model ? watchedModel(createChatModel(llm), health, upstreams.model) : undefined,
    fetchPage: (url: string, signal: AbortSignal) => safeFetch(url, { allowHosts: fetchAllowHosts, signal }),
    now: env.now,
    retry: DEFAULT_RETRY,
  };
  const jobHandler: RunJob = (input, context) =>
    runResearch(ResearchBriefRequest.parse(input), deps, {
      signal: context.signal,
      log: context.log,
      progress: (stage, fraction) => context.progress({ stage, fraction }),
    });

  return {
    admit,
    jobHandler,
    catalogDetails: { search: searchName(search) },
    unavailableNow() {
      const down = downNow();
      return down.length > 0 ? `not taking jobs while down: ${down.join("; ")}` : undefined;
    },
    async probe() {
      const down = downNow();
      const described = `search ${searchName(search)}, ${llm ? `model ${llm.model}` : "extractive (no model configured)"}`;
      // Said, not failed: the other operations stay ready while a research upstream is down (jobs get a 503).
      if (down.length === 0) return described;
      return `${described}; not taking jobs while down: ${down.join("; ")}`;
    },
    async handle(input, ctx) {
      await admit();
      const paymentKey = ctx.paymentKey ?? null;
      // A resumed payment may run this again: its job is the one already recorded.
      const job =
        (paymentKey ? await queue.getByPayment(paymentKey) : undefined) ??
        (await queue.create(
          { id: randomUUID(), type: JOB_TYPE, input, paymentKey, maxAttempts: config.jobs.maxAttempts },
          { queued: paymentKey === null },
        ));
      const statusUrl = `${config.baseUrl}/v1/jobs/${job.id}`;
      return {
        status: 202,
        headers: { location: statusUrl },
        body: { jobId: job.id, status: "queued", statusUrl, pollAfterSeconds: POLL_AFTER_SECONDS },
      };
    },
    async paymentFinal(paymentKey, state) {
      const job = await queue.getByPayment(paymentKey);
      if (!job) {
        if (state === "held") log.error({ paymentKey }, "a held research payment has no job");
        return;
      }
      if (state === "held") await queue.markPaid(job.id);
      else await queue.drop(job.id);
    },
  };
}

export const researchBrief = defineOperation({
  id: "research-brief",
  method: "POST",
  path: "/v1/research-brief",
  priceUsd: "5.00",
  kind: "async",
  summary: "Queue a researched brief with cited sources",
  description:
    "Queues a research job that answers the question concisely with source URLs and explicit caveats: it " +
    "searches the web, reads the top pages, writes a Markdown answer citing them as [n] (or, without a model, " +
    "quotes the most relevant sentences), and removes any citation that does not name a page it read. " +
    "Answers 202 with a status URL (also in Location); poll GET /v1/jobs/{id} (free) until status is " +
    "succeeded or failed. Charged only for a delivered brief: the payment is held at 202 and settled when the " +
    "brief is ready; a job that fails or passes its deadline (expiresAt) is never charged. 503 (nothing " +
    "charged) when no research worker is running or a source it needs is down.",
  tags: ["research"],
  inputFrom: "body",
  input: ResearchBriefRequest,
  output: ResearchJobAccepted,
  jobResult: ResearchBriefResult,
  outputContentType: "application/json",
  example: {
    input: { question: "Which EU regulations govern humanoid robots in warehouses?", requiredSources: 3 },
    output: {
      jobId: "0f8fad5b-d9cb-469f-a165-70867728950e",
      status: "queued",
      statusUrl: "http://localhost:8402/v1/jobs/0f8fad5b-d9cb-469f-a165-70867728950e",
      pollAfterSeconds: POLL_AFTER_SECONDS,
    },
  },
  errorResponses: [
    {
      status: 503,
      description: "The research worker or a source it needs is unavailable; no payment is taken.",
    },
    {
      status: 429,
      description:
        "This payer already has JOB_MAX_HELD_PER_PAYER jobs accepted or being accepted on payments held until they deliver; nothing is charged.",
    },
  ],
  start,
});
