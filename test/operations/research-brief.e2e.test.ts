import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { devPrivateKey } from "../../src/chain/dev-accounts.ts";
import { createPayer, paymentReceipt } from "../../src/client/paying-fetch.ts";
import { researchBrief } from "../../src/operations/research-brief/index.ts";
import { ResearchBriefResult } from "../../src/operations/research-brief/schema.ts";
import { countWords } from "../../src/operations/research-brief/text.ts";
import { jsonPost, startTestService, type TestService, usdcBalances } from "../helpers/service.ts";
import { QUESTION, researchEnv, type StandIns, startStandIns } from "./research-brief-standins.ts";
import { type SourceStandIns, startSourceStandIns } from "./research-sources-standins.ts";

const PRICE = 5_000_000n; // USD 5.00 in USDC atomic units
const SETTLED = ["succeeded", "failed"];

/** Polls a job's status URL until it is finished; returns every status seen and the final body. */
async function pollJob(statusUrl: string, timeoutMs = 30_000) {
  const seen: string[] = [];
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const response = await fetch(statusUrl);
    expect(response.status).toBe(200);
    const body = await response.json();
    if (seen.at(-1) !== body.status) seen.push(body.status);
    if (SETTLED.includes(body.status)) {
      expect(response.headers.get("retry-after")).toBeNull();
      return { seen, body };
    }
    expect(response.headers.get("retry-after")).toBe("2");
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`job at ${statusUrl} did not finish; statuses seen: ${seen.join(" → ")}`);
}

describe("research-brief with a search provider and a model", () => {
  let standIns: StandIns;
  let service: TestService;
  let balanceOf: ReturnType<typeof usdcBalances>;
  const payer = createPayer(devPrivateKey(5));

  beforeAll(async () => {
    standIns = await startStandIns();
    service = await startTestService(researchEnv(standIns), { operations: [researchBrief] });
    balanceOf = usdcBalances(service.localChain?.rpcUrl as string);
  });
  afterAll(async () => {
    await service?.stop();
    await standIns?.stop();
  });

  it("202 → polling → succeeded: cited sources all read, a fabricated citation removed and reported, charged once", async () => {
    const before = [await balanceOf(payer.address), await balanceOf(service.payTo)];
    const request = {
      question: QUESTION,
      context: "We run 40 electric delivery vans in Finland.",
      requiredSources: 3,
      maxWords: 200,
    };

    const unpaid = await fetch(`${service.url}/v1/research-brief`, jsonPost(request));
    expect(unpaid.status).toBe(402);
    const headers = await payer.signPayment(unpaid);
    const accepted = await fetch(`${service.url}/v1/research-brief`, jsonPost(request, headers));
    expect(accepted.status).toBe(202);
    const body = await accepted.json();
    expect(body).toEqual({
      jobId: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/),
      status: "queued",
      statusUrl: `${service.url}/v1/jobs/${body.jobId}`,
      pollAfterSeconds: 2,
    });
    expect(accepted.headers.get("location")).toBe(body.statusUrl);
    // Accepted, not charged: the payment is held and settled only when the brief is ready.
    expect(paymentReceipt(accepted)).toBeUndefined();
    expect(await balanceOf(payer.address)).toBe(before[0]);

    // The same payment again is the same job, not a second one, and not a second charge.
    const replay = await fetch(`${service.url}/v1/research-brief`, jsonPost(request, headers));
    expect(replay.status).toBe(202);
    expect(replay.headers.get("x-payment-replayed")).toBe("true");
    expect(await replay.json()).toEqual(body);

    const { body: job } = await pollJob(body.statusUrl);
    expect(job).toMatchObject({ id: body.jobId, type: "research-brief", status: "succeeded" });
    expect(job.payment).toMatchObject({
      state: "settled",
      amount: String(PRICE),
      network: "eip155:8453",
      transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/),
    });
    expect(Date.parse(job.payment.settledAt)).toBeGreaterThanOrEqual(Date.parse(job.startedAt));
    expect(await balanceOf(payer.address)).toBe((before[0] as bigint) - PRICE);
    expect(await balanceOf(service.payTo)).toBe((before[1] as bigint) + PRICE);
    expect(Date.parse(job.startedAt)).toBeGreaterThanOrEqual(Date.parse(job.createdAt));
    expect(Date.parse(job.finishedAt)).toBeGreaterThanOrEqual(Date.parse(job.startedAt));
    const brief = ResearchBriefResult.parse(job.result);

    expect(brief.question).toBe(QUESTION);
    expect(brief.method).toEqual({ search: "searxng", model: "standin-model-1" });
    expect(brief.sources.length).toBeGreaterThanOrEqual(3);
    expect(brief.sources.map((source) => source.n)).toEqual(brief.sources.map((_, index) => index + 1));
    for (const source of brief.sources) {
      // Every source is a page the stand-in really served (not the refused redirect, not the 404).
      expect(standIns.articleUrls).toContain(source.url);
      expect(standIns.pageRequests).toContain(new URL(source.url).pathname);
      expect(source.excerpt.length).toBeGreaterThan(50);
    }
    expect(brief.sources.map((source) => source.url)).not.toContain(`${standIns.pagesUrl}/moved`);
    const cited = [...brief.answer.matchAll(/\[(\d+)\]/g)].map((match) => Number(match[1]));
    expect(cited.length).toBeGreaterThan(0);
    for (const n of cited) expect(brief.sources.map((source) => source.n)).toContain(n);
    expect(brief.answer).not.toContain("[9]");
    expect(brief.answer).not.toContain("fabricated.example");
    expect(brief.wordCount).toBe(countWords(brief.answer));
    expect(brief.wordCount).toBeLessThanOrEqual(200);
    expect(brief.caveats).toContainEqual(
      "Removed 2 citations that pointed at no page that was read: a link to https://fabricated.example/winter-survey, [9]; " +
        "1 sentence that rested only on them was removed too.",
    );
    expect(brief.answer).not.toContain("a third of their range");
    expect(brief.answer).not.toMatch(/(\[\d+\])\1/);
    expect(brief.caveats.some((caveat) => caveat.startsWith("Noted while writing: The sources differ"))).toBe(
      true,
    );
    expect(brief.caveats.some((caveat) => caveat.startsWith("Recency:"))).toBe(true);
    expect(brief.caveats.at(-1)).toContain("Machine-generated text");

    // The model was given the numbered sources it was allowed to cite, and the context.
    const prompt =
      standIns.modelRequests
        .at(-1)
        ?.messages.map((message) => message.content)
        .join("\n") ?? "";
    for (const source of brief.sources)
      expect(prompt).toContain(`[${source.n}] ${source.title}\nURL: ${source.url}`);
    expect(prompt).toContain("Finland");
    expect(standIns.searches).toContain(QUESTION);

    expect(await balanceOf(payer.address)).toBe((before[0] as bigint) - PRICE);
  });

  it("more required sources than can be read: the brief completes with the shortfall as its first caveat", async () => {
    const response = await payer.fetch(
      `${service.url}/v1/research-brief`,
      jsonPost({ question: QUESTION, requiredSources: 6 }),
    );
    expect(response.status).toBe(202);
    const { body: job } = await pollJob((await response.json()).statusUrl);
    expect(job.status).toBe("succeeded");
    expect(job.result.sources).toHaveLength(4);
    expect(job.result.caveats[0]).toBe(
      "Source shortfall: only 4 of the 6 required sources could be found and read; the answer rests on fewer sources than asked for.",
    );
  });

  it("an invalid request is a 400 before any payment", async () => {
    const before = await balanceOf(payer.address);
    const response = await payer.fetch(
      `${service.url}/v1/research-brief`,
      jsonPost({ question: "short", requiredSources: 11, maxWords: 100, extra: true }),
    );
    expect(response.status).toBe(400);
    const problem = await response.json();
    expect(problem.errors.map((error: { pointer: string }) => error.pointer).sort()).toEqual([
      "/extra",
      "/maxWords",
      "/question",
      "/requiredSources",
    ]);
    expect(await balanceOf(payer.address)).toBe(before);
  });

  it("the jobs endpoint: 400 for an id that is not a UUID, 404 for an unknown one", async () => {
    const invalid = await fetch(`${service.url}/v1/jobs/123`);
    expect(invalid.status).toBe(400);
    expect(invalid.headers.get("content-type")).toContain("application/problem+json");
    expect((await invalid.json()).errors).toEqual([{ pointer: "/id", message: "must be a UUID" }]);
    const unknown = await fetch(`${service.url}/v1/jobs/${crypto.randomUUID()}`);
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ type: "urn:utility402:problem:job-not-found", status: 404 });
  });

  it("/readyz names the live worker and the providers", async () => {
    const ready = await (await fetch(`${service.url}/readyz`)).json();
    expect(ready.checks.worker).toBe("1 alive, running research-brief");
    expect(ready.checks["research-brief"]).toBe("search searxng, model standin-model-1");
  });
});

describe("research-brief without a model: the extractive mode", () => {
  let standIns: StandIns;
  let service: TestService;
  const payer = createPayer(devPrivateKey(6));

  beforeAll(async () => {
    standIns = await startStandIns();
    service = await startTestService(researchEnv(standIns, { withModel: false }), {
      operations: [researchBrief],
    });
  });
  afterAll(async () => {
    await service?.stop();
    await standIns?.stop();
  });

  it("ranks sentences from the sources, cites each, says so in method and caveats", async () => {
    const response = await payer.fetch(
      `${service.url}/v1/research-brief`,
      jsonPost({ question: QUESTION, requiredSources: 3, maxWords: 200 }),
    );
    expect(response.status).toBe(202);
    const { body: job } = await pollJob((await response.json()).statusUrl);
    expect(job.status).toBe("succeeded");
    const brief = ResearchBriefResult.parse(job.result);
    expect(brief.method).toEqual({ search: "searxng", model: "extractive" });
    expect(standIns.modelRequests).toHaveLength(0);
    expect(brief.sources).toHaveLength(3);
    expect(brief.wordCount).toBeLessThanOrEqual(200);
    const bullets = brief.answer.split("\n").filter((line) => line.startsWith("- "));
    expect(bullets.length).toBeGreaterThanOrEqual(3);
    const texts = brief.sources.map((source) => source.excerpt.replace(/…$/, ""));
    for (const bullet of bullets) {
      // Each bullet is a sentence quoted from the source it cites.
      const match = /^- (.*) \[(\d+)\]$/.exec(bullet);
      expect(match, bullet).not.toBeNull();
      const source = brief.sources.find((candidate) => candidate.n === Number(match?.[2]));
      expect(source, bullet).toBeDefined();
      const page = standIns.pageRequests.includes(new URL(source?.url as string).pathname);
      expect(page).toBe(true);
    }
    expect(new Set(bullets.map((bullet) => /\[(\d+)\]$/.exec(bullet)?.[1])).size).toBe(3);
    expect(texts.length).toBe(3);
    expect(brief.answer).toContain("lithium plating");
    expect(brief.caveats.at(-1)).toContain("Extractive brief");
    expect(brief.caveats.some((caveat) => caveat.includes("not detected in extractive mode"))).toBe(true);
  });
});

describe("research-brief with no search provider configured", () => {
  let sources: SourceStandIns;
  let service: TestService;

  beforeAll(async () => {
    // The keyless default (Wikipedia and Crossref), its base URLs on stand-ins so nothing leaves the machine.
    sources = await startSourceStandIns();
    service = await startTestService(
      { RESEARCH_WIKIPEDIA_URL: sources.wikipediaUrl, RESEARCH_CROSSREF_URL: sources.crossrefUrl },
      { operations: [researchBrief] },
    );
  });
  afterAll(async () => {
    await service?.stop();
    await sources?.stop();
  });

  it("offers research on Wikipedia and Crossref: payment terms (402), the catalog and /readyz say so", async () => {
    const response = await fetch(`${service.url}/v1/research-brief`, jsonPost({ question: QUESTION }));
    expect(response.status).toBe(402);
    expect(response.headers.get("PAYMENT-REQUIRED")).toBeTruthy();
    const catalog = await (await fetch(`${service.url}/catalog.json`)).json();
    expect(catalog.operations.find((entry: { id: string }) => entry.id === "research-brief")).toMatchObject({
      available: true,
      search: "wikipedia+crossref",
    });
    const ready = await (await fetch(`${service.url}/readyz`)).json();
    expect(ready.checks.worker).toBe("1 alive, running research-brief");
    expect(ready.checks["research-brief"]).toBe(
      "search wikipedia+crossref, extractive (no model configured)",
    );
  });
});
