import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.ts";
import { runResearch } from "../../src/operations/research-brief/pipeline.ts";
import { HostQueue } from "../../src/operations/research-brief/polite-fetch.ts";
import { createSearchProviders, type SearchSettings } from "../../src/operations/research-brief/search.ts";
import { researchUserAgent } from "../../src/operations/research-brief/settings.ts";
import { WIKIPEDIA_LICENCE } from "../../src/operations/research-brief/wikipedia.ts";
import { oneAtATime, type SourceStandIns, startSourceStandIns } from "./research-sources-standins.ts";

const SCHOLARLY = "What is the Python programming language used for in ecological research?";
const BASE = "https://research.example";

let standIns: SourceStandIns;
beforeAll(async () => {
  standIns = await startSourceStandIns();
});
afterAll(async () => {
  await standIns?.stop();
});
beforeEach(() => {
  standIns.requests.length = 0;
  standIns.delayMs = 15;
  standIns.failCrossref = 0;
});

/** The search settings the service builds from its environment, pointed at the stand-ins. */
const settings = (env: Record<string, string> = {}): SearchSettings =>
  loadConfig({
    BASE_URL: BASE,
    RESEARCH_WIKIPEDIA_URL: standIns.wikipediaUrl,
    RESEARCH_CROSSREF_URL: standIns.crossrefUrl,
    ...env,
  }).research.search;

const of = (server: "wikipedia" | "crossref") =>
  standIns.requests.filter((request) => request.server === server);

describe("the per-host queue", () => {
  it("runs one task at a time per host, in order, and hosts side by side", async () => {
    const queue = new HostQueue();
    const log: string[] = [];
    const task = (name: string, ms: number) => async () => {
      log.push(`start ${name}`);
      await new Promise((resolve) => setTimeout(resolve, ms));
      log.push(`end ${name}`);
      return name;
    };
    const results = await Promise.all([
      queue.run("https://a.example/1", task("a1", 30)),
      queue.run("https://a.example/2", task("a2", 5)),
      queue.run("https://b.example/1", task("b1", 10)),
    ]);
    expect(results).toEqual(["a1", "a2", "b1"]);
    expect(log).toEqual(["start a1", "start b1", "end b1", "end a1", "start a2", "end a2"]);
  });

  it("a failed task does not stop the queue; a caller that gives up while waiting is never run", async () => {
    const queue = new HostQueue();
    const ran: string[] = [];
    const failing = queue.run("https://a.example/", async () => {
      await new Promise((resolve) => setTimeout(resolve, 20));
      throw new Error("boom");
    });
    const controller = new AbortController();
    const waiting = queue.run("https://a.example/", async () => ran.push("abandoned"), controller.signal);
    const after = queue.run("https://a.example/", async () => ran.push("after"));
    controller.abort(new Error("gave up"));
    await expect(waiting).rejects.toThrow("gave up");
    await expect(failing).rejects.toThrow("boom");
    await after;
    expect(ran).toEqual(["after"]);
  });
});

describe("Wikipedia and Crossref access rules", () => {
  it("defaults: wikipedia then crossref, named wikipedia+crossref; the User-Agent names the service and its contact", () => {
    const search = settings({ RESEARCH_CONTACT: "ops@example.org" });
    expect(search.providers).toEqual(["wikipedia", "crossref"]);
    expect(search.userAgent).toBe(
      "utility402/1.0 (research-brief; +https://research.example; mailto:ops@example.org)",
    );
    expect(search.mailto).toBe("ops@example.org");
    expect(createSearchProviders(search).name).toBe("wikipedia+crossref");
    expect(createSearchProviders(settings({ RESEARCH_SEARCH_PROVIDER: "crossref" })).name).toBe("crossref");
  });

  it("one query: Wikipedia and Crossref asked side by side, each once, with the UA and mailto; hits interleaved by rank", async () => {
    standIns.delayMs = 60;
    const provider = createSearchProviders(settings({ RESEARCH_CONTACT: "ops@example.org" }));
    const hits = await provider.search(SCHOLARLY, { count: 10 });

    const ua = researchUserAgent(BASE, "ops@example.org");
    expect(standIns.requests.map((request) => request.userAgent)).toEqual([ua, ua]);
    const [wiki] = of("wikipedia");
    const [crossref] = of("crossref");
    expect(wiki?.path).toBe("/w/api.php");
    expect(wiki?.query).toEqual({
      action: "query",
      list: "search",
      srsearch: SCHOLARLY,
      srlimit: "10",
      srnamespace: "0",
      format: "json",
      formatversion: "1",
    });
    expect(crossref?.path).toBe("/works");
    expect(crossref?.query).toEqual({
      query: SCHOLARLY,
      rows: "10",
      select: "DOI,type,title,abstract,author,container-title,issued,published,created",
      mailto: "ops@example.org",
    });
    // Different hosts are not queued behind each other.
    expect(Math.abs((wiki?.arrivedAt ?? 0) - (crossref?.arrivedAt ?? 0))).toBeLessThan(50);

    // Wikipedia's ten hits and Crossref's fifteen works with an abstract (of twenty), interleaved.
    expect(hits).toHaveLength(20);
    expect(hits.slice(0, 4).map((hit) => hit.url)).toEqual([
      `${new URL(standIns.wikipediaUrl).origin}/wiki/Python_(programming_language)`,
      "https://doi.org/10.1111/ele.14024",
      `${new URL(standIns.wikipediaUrl).origin}/wiki/History_of_Python`,
      "https://doi.org/10.1111/ele.13085",
    ]);
    expect(hits.every((hit) => hit.document !== undefined)).toBe(true);
  });

  it("several searches and article reads at once: still one request at a time per host", async () => {
    const provider = createSearchProviders(settings({ RESEARCH_CONTACT: "https://ops.example/contact" }));
    const lists = await Promise.all(
      [SCHOLARLY, "python ecological research", "python research language"].map((query) =>
        provider.search(query, { count: 5 }),
      ),
    );
    const wikiHits = (lists[0] ?? []).filter((hit) => hit.url.includes("/wiki/"));
    const documents = await Promise.allSettled(wikiHits.slice(0, 3).map((hit) => hit.document?.()));
    expect(documents.map((result) => result.status)).toEqual(["fulfilled", "rejected", "rejected"]);
    expect(documents[0]).toMatchObject({
      value: {
        url: "https://en.wikipedia.org/w/index.php?title=Python_(programming_language)&oldid=1345336232",
        licence: WIKIPEDIA_LICENCE,
      },
    });
    // "History of Python" has no recording: the stand-in answers 404 and the client says so.
    expect((documents[1] as PromiseRejectedResult).reason.message).toMatch(/^wikipedia: answered 404/);

    expect(of("wikipedia")).toHaveLength(6);
    expect(of("crossref")).toHaveLength(3);
    expect(oneAtATime(of("wikipedia"))).toBe(true);
    expect(oneAtATime(of("crossref"))).toBe(true);
    const extract = of("wikipedia").find((request) => request.query.prop);
    expect(extract?.query).toEqual({
      action: "query",
      prop: "extracts|revisions|info",
      titles: "Python (programming language)",
      explaintext: "1",
      exsectionformat: "wiki",
      rvprop: "ids|timestamp",
      inprop: "url",
      redirects: "1",
      format: "json",
      formatversion: "1",
    });
    // A URL contact is named in the User-Agent; Crossref gets no mailto then.
    for (const request of standIns.requests) {
      expect(request.userAgent).toBe(
        "utility402/1.0 (research-brief; +https://research.example; https://ops.example/contact)",
      );
    }
    expect(of("crossref").every((request) => !("mailto" in request.query))).toBe(true);
  });

  it("without RESEARCH_CONTACT the User-Agent still names the service and its BASE_URL", async () => {
    const provider = createSearchProviders(settings());
    await provider.search(SCHOLARLY, { count: 3 });
    expect(standIns.requests.map((request) => request.userAgent)).toEqual([
      "utility402/1.0 (research-brief; +https://research.example)",
      "utility402/1.0 (research-brief; +https://research.example)",
    ]);
    expect(of("crossref")[0]?.query.mailto).toBeUndefined();
  });

  it("a question that does not look scholarly is not sent to Crossref", async () => {
    const hits = await createSearchProviders(settings()).search("What is Python used for?", { count: 10 });
    expect(of("crossref")).toHaveLength(0);
    expect(hits).toHaveLength(10);
  });

  it("a DOI in the question is looked up as /works/{doi}; an unknown DOI gives no hits, a work without abstract none either", async () => {
    const provider = createSearchProviders(
      settings({ RESEARCH_SEARCH_PROVIDER: "crossref", RESEARCH_CONTACT: "ops@example.org" }),
    );
    const hits = await provider.search("What did the study 10.1038/srep16696 find?", { count: 10 });
    expect(of("crossref").map((request) => [request.path, request.query])).toEqual([
      ["/works/10.1038/srep16696", { mailto: "ops@example.org" }],
    ]);
    expect(hits.map((hit) => hit.url)).toEqual(["https://doi.org/10.1038/srep16696"]);
    const document = await hits[0]?.document?.();
    expect(document?.title).toBe(
      "Single-molecule FRET studies on alpha-synuclein oligomerization of Parkinson’s disease genetically related mutants",
    );
    expect(await provider.search("Summarize doi:10.1371/journal.pone.0033693", { count: 10 })).toEqual([]);
    expect(await provider.search("Summarize doi:10.9999/unknown", { count: 10 })).toEqual([]);
  });

  it("Crossref down: the Wikipedia hits are still returned; both down is the search's (retryable) failure", async () => {
    standIns.failCrossref = 1;
    const hits = await createSearchProviders(settings()).search(SCHOLARLY, { count: 10 });
    expect(hits).toHaveLength(10);
    expect(hits.every((hit) => hit.url.includes("/wiki/"))).toBe(true);

    standIns.failCrossref = 1;
    const error = await createSearchProviders(
      settings({ RESEARCH_WIKIPEDIA_URL: "http://127.0.0.1:9/w/api.php" }),
    )
      .search(SCHOLARLY, { count: 10 })
      .catch((caught) => caught);
    expect(error.retryable).toBe(true);
    expect(error.message).toMatch(/^wikipedia\+crossref: wikipedia: unreachable .*; crossref: answered 503/);
  });
});

describe("the pipeline reads these hits from their APIs, not with the page fetcher", () => {
  it("an extractive brief from the Python article and Crossref abstracts, with the revision permalink and the licence", async () => {
    const fetched: string[] = [];
    const brief = await runResearch(
      { question: SCHOLARLY, requiredSources: 3, maxWords: 300 },
      {
        search: createSearchProviders(settings({ RESEARCH_CONTACT: "ops@example.org" })),
        fetchPage: async (url) => {
          fetched.push(url);
          throw new Error("no page may be fetched for these hits");
        },
        now: () => new Date("2026-04-01T00:00:00Z"),
        retry: { attempts: 1, baseDelayMs: 1 },
      },
      { signal: new AbortController().signal, progress: async () => {} },
    );
    expect(fetched).toEqual([]);
    expect(brief.method).toEqual({ search: "wikipedia+crossref", model: "extractive" });
    expect(brief.sources.map((source) => source.url)).toEqual([
      "https://en.wikipedia.org/w/index.php?title=Python_(programming_language)&oldid=1345336232",
      "https://doi.org/10.1111/ele.14024",
      "https://doi.org/10.1111/ele.13085",
    ]);
    expect(brief.sources[0]).toMatchObject({
      title: "Python (programming language)",
      publishedAt: "2026-03-27T09:26:22Z",
    });
    expect(brief.sources[1]).toMatchObject({ title: "The forecast trap", publishedAt: "2022-05-30" });
    expect(brief.caveats).toContain(`${WIKIPEDIA_LICENCE} (source 1).`);
    expect(brief.caveats.at(-1)).toContain("Extractive brief");
    expect(oneAtATime(of("wikipedia"))).toBe(true);
    expect(oneAtATime(of("crossref"))).toBe(true);
  });
});
