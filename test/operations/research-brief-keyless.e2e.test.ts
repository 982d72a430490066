import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { devPrivateKey } from "../../src/chain/dev-accounts.ts";
import { createPayer } from "../../src/client/paying-fetch.ts";
import { parseCrossrefAnswer, workDocument } from "../../src/operations/research-brief/crossref.ts";
import { groundAnswer } from "../../src/operations/research-brief/grounding.ts";
import { researchBrief } from "../../src/operations/research-brief/index.ts";
import { ResearchBriefResult } from "../../src/operations/research-brief/schema.ts";
import { parseWikipediaArticle, WIKIPEDIA_LICENCE } from "../../src/operations/research-brief/wikipedia.ts";
import { jsonPost, startTestService, type TestService, usdcBalances } from "../helpers/service.ts";
import {
  fixture,
  oneAtATime,
  pythonArticle,
  type SourceStandIns,
  startSourceStandIns,
} from "./research-sources-standins.ts";

const PRICE = 5_000_000n; // USD 5.00 in USDC atomic units
const QUESTION = "What is the Python programming language used for in ecological research?";
const CONTACT = "research-ops@example.org";
const PERMALINK = "https://en.wikipedia.org/w/index.php?title=Python_(programming_language)&oldid=1345336232";

async function pollJob(statusUrl: string, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const body = await (await fetch(statusUrl)).json();
    if (body.status === "succeeded" || body.status === "failed") return body;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`job at ${statusUrl} did not finish`);
}

/**
 * The real service with no search provider and no model configured: only the Wikipedia and Crossref
 * base URLs point at stand-ins that replay recorded answers (and the operator contact is set).
 */
describe("research-brief with nothing but the keyless defaults", () => {
  let standIns: SourceStandIns;
  let service: TestService;
  let balanceOf: ReturnType<typeof usdcBalances>;
  const payer = createPayer(devPrivateKey(3));

  beforeAll(async () => {
    standIns = await startSourceStandIns();
    service = await startTestService(
      {
        RESEARCH_WIKIPEDIA_URL: standIns.wikipediaUrl,
        RESEARCH_CROSSREF_URL: standIns.crossrefUrl,
        RESEARCH_CONTACT: CONTACT,
      },
      { operations: [researchBrief] },
    );
    balanceOf = usdcBalances(service.localChain?.rpcUrl as string);
  });
  afterAll(async () => {
    await service?.stop();
    await standIns?.stop();
  });

  it("/readyz and the catalog name Wikipedia and Crossref", async () => {
    const ready = await (await fetch(`${service.url}/readyz`)).json();
    expect(ready.checks["research-brief"]).toBe(
      "search wikipedia+crossref, extractive (no model configured)",
    );
    const catalog = await (await fetch(`${service.url}/catalog.json`)).json();
    expect(catalog.operations.find((entry: { id: string }) => entry.id === "research-brief")).toMatchObject({
      available: true,
      search: "wikipedia+crossref",
    });
  });

  it("a paid question gets a brief from the Wikipedia article and Crossref works, cited by revision and DOI, charged once", async () => {
    const before = [await balanceOf(payer.address), await balanceOf(service.payTo)] as const;
    const accepted = await payer.fetch(
      `${service.url}/v1/research-brief`,
      jsonPost({ question: QUESTION, requiredSources: 3, maxWords: 300 }),
    );
    expect(accepted.status).toBe(202);
    const job = await pollJob((await accepted.json()).statusUrl);
    expect(job.status, JSON.stringify(job.error)).toBe("succeeded");
    const brief = ResearchBriefResult.parse(job.result);

    expect(brief.method).toEqual({ search: "wikipedia+crossref", model: "extractive" });
    const urls = brief.sources.map((source) => source.url);
    expect(urls).toContain(PERMALINK);
    expect(urls.filter((url) => url.startsWith("https://doi.org/10."))).not.toHaveLength(0);
    const wikipedia = brief.sources.find((source) => source.url === PERMALINK);
    expect(wikipedia).toMatchObject({
      title: "Python (programming language)",
      publishedAt: "2026-03-27T09:26:22Z",
    });
    const work = brief.sources.find((source) => source.url === "https://doi.org/10.1111/ele.14024");
    expect(work).toMatchObject({ title: "The forecast trap", publishedAt: "2022-05-30" });

    // The answer cites the article (by its revision permalink, as source n) and a Crossref work.
    const cited = new Set([...brief.answer.matchAll(/\[(\d+)\]/g)].map((match) => Number(match[1])));
    expect(cited.has(wikipedia?.n as number)).toBe(true);
    expect(
      brief.sources.some((source) => source.url.startsWith("https://doi.org/") && cited.has(source.n)),
    ).toBe(true);
    expect(brief.caveats).toContain(`${WIKIPEDIA_LICENCE} (source ${wikipedia?.n}).`);

    // The delivered answer passes the grounding check against the texts the stand-ins served (the
    // recorded article and Crossref works): every figure and name it states is in a source it cites.
    const served = new Map<string, string>([
      [PERMALINK, parseWikipediaArticle(JSON.parse(pythonArticle()), standIns.wikipediaUrl).text],
    ]);
    for (const work of parseCrossrefAnswer(fixture("crossref-works-query-01.json"))) {
      const document = workDocument(work);
      served.set(document.url, document.text);
    }
    const grounding = groundAnswer(
      brief.answer,
      brief.sources.map((source) => ({
        n: source.n,
        url: source.url,
        title: source.title,
        text: served.get(source.url) ?? "",
      })),
      QUESTION,
    );
    expect(grounding.unsupported).toEqual([]);
    expect(grounding.uncited).toEqual([]);
    expect(grounding.text).toBe(brief.answer);

    // Wikipedia and Crossref were asked one request at a time each, naming the service and its
    // operator; Crossref with the operator's mailto.
    const userAgent = `utility402/1.0 (research-brief; +${service.url}; mailto:${CONTACT})`;
    expect(standIns.requests.length).toBeGreaterThan(2);
    for (const request of standIns.requests) expect(request.userAgent).toBe(userAgent);
    const crossref = standIns.requests.filter((request) => request.server === "crossref");
    expect(crossref.length).toBeGreaterThan(0);
    for (const request of crossref) expect(request.query.mailto).toBe(CONTACT);
    expect(oneAtATime(standIns.requests.filter((request) => request.server === "wikipedia"))).toBe(true);
    expect(oneAtATime(crossref)).toBe(true);
    expect(
      standIns.requests.some(
        (request) =>
          request.query.prop === "extracts|revisions|info" &&
          request.query.titles === "Python (programming language)",
      ),
    ).toBe(true);

    // Charged exactly once, the price, once the brief was delivered.
    await expect.poll(() => balanceOf(payer.address), { timeout: 10_000 }).toBe(before[0] - PRICE);
    expect(await balanceOf(service.payTo)).toBe(before[1] + PRICE);
  });
});
