import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";

/**
 * Stand-ins on 127.0.0.1 for what a research job reaches over the internet: a SearXNG instance
 * (its JSON API shape), an OpenAI-compatible chat-completions model, and the web pages the search
 * points at. Tests steer them through the fields below.
 */

/** OpenAI's answer to `max_tokens` sent to a reasoning model, as recorded (see test/fixtures/research/SOURCES.md). */
const UNSUPPORTED_MAX_TOKENS = fs.readFileSync(
  new URL("../fixtures/research/openai-chat-error-unsupported-max-tokens.json", import.meta.url),
);

export const QUESTION =
  "Why do lithium-ion batteries lose capacity in cold weather, and how can fleets limit it?";

interface Article {
  slug: string;
  title: string;
  published?: string;
  paragraphs: string[];
}

const ARTICLES: Article[] = [
  {
    slug: "cold-chemistry",
    title: "The chemistry of cold batteries",
    published: "2025-03-14T08:00:00Z",
    paragraphs: [
      "Lithium-ion batteries lose usable capacity in cold weather because the electrolyte becomes more viscous and lithium ions move more slowly between the electrodes.",
      "At minus twenty degrees Celsius a typical cell delivers roughly sixty to seventy percent of its rated capacity, although most of that capacity returns once the cell warms up again.",
      "Charging in the cold is the larger risk: lithium plating on the graphite anode can permanently reduce capacity and, in severe cases, create internal short circuits.",
      "Battery management systems therefore limit the charging current below about five degrees Celsius and many refuse to charge below freezing.",
    ],
  },
  {
    slug: "fleet-practice",
    title: "Winter practice for electric fleets",
    published: "2024-11-02T10:30:00Z",
    paragraphs: [
      "Fleet operators limit cold-weather capacity loss by preconditioning batteries while vehicles are still plugged in, so the energy for heating comes from the grid rather than the pack.",
      "Parking vehicles indoors or in sheltered depots keeps cells several degrees warmer overnight and measurably reduces the morning range penalty.",
      "Operators also schedule charging to finish shortly before departure, because a battery that was just charged is still warm when the shift starts.",
      "Telematics data from winter routes helps dispatchers assign shorter routes to vehicles with older packs.",
    ],
  },
  {
    slug: "heat-pumps",
    title: "Heat pumps and winter range",
    paragraphs: [
      "Cabin heating is a major share of winter energy use in electric vehicles, and resistive heaters draw several kilowatts at low temperatures.",
      "Heat pumps move heat instead of generating it and can cut heating energy by half in mild cold, which limits the apparent capacity loss drivers notice.",
      "Below about minus fifteen degrees Celsius the efficiency advantage of heat pumps shrinks, so range still falls noticeably in very cold climates.",
      "Seat and steering wheel heaters warm occupants directly and use far less energy than heating the whole cabin air.",
    ],
  },
  {
    slug: "degradation-study",
    title: "Long-term degradation in cold climates",
    published: "2019-06-01T00:00:00Z",
    paragraphs: [
      "A multi-year study of vehicles in Nordic climates found that cold weather alone caused little permanent degradation when charging limits were respected.",
      "Permanent capacity loss was mostly associated with repeated fast charging of cold packs, which promotes lithium plating on the anode.",
      "Vehicles that preconditioned their batteries before fast charging showed degradation rates similar to vehicles in temperate climates.",
      "The study recommends that fleets avoid fast charging cold batteries and rely on depot charging overnight during winter months.",
    ],
  },
];

function articleHtml(article: Article): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${article.title}</title>
${article.published ? `<meta property="article:published_time" content="${article.published}">` : ""}
</head><body>
<nav><a href="/">Home</a> <a href="/about">About</a> <a href="/subscribe">Subscribe to our newsletter</a></nav>
<main><article><h1>${article.title}</h1>
${article.paragraphs.map((paragraph) => `<p>${paragraph}</p>`).join("\n")}
</article></main>
<footer><p>Copyright the publisher. All rights reserved. Cookie settings.</p></footer>
</body></html>`;
}

export interface StandIns {
  searchUrl: string;
  modelUrl: string;
  pagesUrl: string;
  /** Queries the search stand-in received. */
  searches: string[];
  /** Paths the page server was asked for. */
  pageRequests: string[];
  /** Chat-completion request bodies the model stand-in received. */
  modelRequests: { model: string; messages: { role: string; content: string }[] }[];
  /** The next N model requests get no answer at all (the connection stays open). */
  hangModel: number;
  /** The next N model requests are answered 500 (a model provider that is down). */
  failModel: number;
  /** The next N searches are answered 502 (a search provider that is down behind its proxy). */
  failSearch: number;
  /**
   * A reasoning model: a request carrying `max_tokens` is answered 400 with OpenAI's recorded body
   * (test/fixtures/research/openai-chat-error-unsupported-max-tokens.json).
   */
  refuseMaxTokens: boolean;
  /** Resolves on the next model request. */
  nextModelRequest(): Promise<void>;
  /** The page URLs the search stand-in returns, in rank order. */
  articleUrls: string[];
  stop(): Promise<void>;
}

async function listen(handler: http.RequestListener): Promise<{ server: http.Server; url: string }> {
  const server = http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

const readBody = (request: http.IncomingMessage) =>
  new Promise<string>((resolve) => {
    let body = "";
    request.on("data", (chunk) => (body += chunk));
    request.on("end", () => resolve(body));
  });

/**
 * The model stand-in answers like a model that mostly behaves: it cites the numbered sources it was
 * given, and also one source number that does not exist and one URL it never read (the kind of
 * citation the brief must remove and report), then lists a caveat.
 */
function modelAnswer(prompt: string): string {
  const numbers = [...prompt.matchAll(/^\[(\d+)\] /gm)].map((match) => Number(match[1]));
  const cite = (index: number) => `[${numbers[index % numbers.length]}]`;
  return [
    `Cold weather slows the lithium ions in the electrolyte, so a cold battery delivers less of its capacity until it warms up ${cite(0)}.`,
    `Charging a cold pack is the real danger: lithium plating can cause permanent loss, which is why battery management limits charging below freezing ${cite(0)}${cite(3)}.`,
    "",
    `Fleets limit the loss by preconditioning while plugged in, parking indoors and finishing charging just before departure ${cite(1)}. Heat pumps halve heating energy in mild cold ${cite(2)}.`,
    `A 2023 survey claims fleets lose a third of their range every winter [9], see also [the survey](https://fabricated.example/winter-survey).`,
    "",
    "CAVEATS:",
    `- The sources differ on how much permanent degradation cold weather causes ${cite(0)}${cite(3)}.`,
  ].join("\n");
}

export async function startStandIns(): Promise<StandIns> {
  const state = {
    searches: [] as string[],
    pageRequests: [] as string[],
    modelRequests: [] as StandIns["modelRequests"],
    hangModel: 0,
    failModel: 0,
    failSearch: 0,
    refuseMaxTokens: false,
    waiters: [] as (() => void)[],
  };

  const pages = await listen((request, response) => {
    const path = new URL(request.url ?? "/", "http://127.0.0.1").pathname;
    state.pageRequests.push(path);
    const article = ARTICLES.find((candidate) => path === `/articles/${candidate.slug}`);
    if (article) {
      response.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(articleHtml(article));
    } else if (path === "/moved") {
      // A search hit that redirects into the private network: the fetcher must refuse it.
      response.writeHead(302, { location: "http://10.20.30.40/internal" }).end();
    } else {
      response.writeHead(404, { "content-type": "text/html" }).end("<p>not found</p>");
    }
  });
  const articleUrls = [
    `${pages.url}/articles/cold-chemistry`,
    `${pages.url}/moved`,
    `${pages.url}/articles/fleet-practice`,
    `${pages.url}/gone`,
    `${pages.url}/articles/heat-pumps`,
    `${pages.url}/articles/degradation-study`,
  ];

  const search = await listen((request, response) => {
    const url = new URL(request.url ?? "/", "http://127.0.0.1");
    if (url.pathname !== "/search" || url.searchParams.get("format") !== "json") {
      response.writeHead(403, { "content-type": "text/html" }).end("<p>format not allowed</p>");
      return;
    }
    const query = url.searchParams.get("q") ?? "";
    state.searches.push(query);
    if (state.failSearch > 0) {
      state.failSearch--;
      response.writeHead(502, { "content-type": "text/html" }).end("<h1>502 Bad Gateway</h1>");
      return;
    }
    // The SearXNG JSON API's answer (GET /search?q=…&format=json).
    const body = {
      query,
      number_of_results: articleUrls.length,
      results: articleUrls.map((link, index) => {
        const article = ARTICLES.find((candidate) => link.endsWith(candidate.slug));
        return {
          url: link,
          title: article?.title ?? "Moved page",
          content: article?.paragraphs[0] ?? "This page has moved.",
          engine: "duckduckgo",
          parsed_url: ["http", new URL(link).host, new URL(link).pathname, "", "", ""],
          template: "default.html",
          engines: ["duckduckgo", "brave"],
          positions: [index + 1],
          publishedDate: null,
          score: 2 / (index + 1),
          category: "general",
        };
      }),
      answers: [],
      corrections: [],
      infoboxes: [],
      suggestions: [],
      unresponsive_engines: [],
    };
    response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(body));
  });

  const model = await listen(async (request, response) => {
    if (request.method !== "POST" || request.url !== "/v1/chat/completions") {
      response
        .writeHead(404, { "content-type": "application/json" })
        .end('{"error":{"message":"not found"}}');
      return;
    }
    const body = JSON.parse(await readBody(request));
    state.modelRequests.push(body);
    for (const wake of state.waiters.splice(0)) wake();
    if (state.hangModel > 0) {
      state.hangModel--;
      return; // never answers: the worker holding this job is about to be killed
    }
    if (state.refuseMaxTokens && "max_tokens" in body) {
      response.writeHead(400, { "content-type": "application/json" }).end(UNSUPPORTED_MAX_TOKENS);
      return;
    }
    if (state.failModel > 0) {
      state.failModel--;
      response
        .writeHead(500, { "content-type": "application/json" })
        .end(
          '{"error":{"message":"The server had an error while processing your request.","type":"server_error"}}',
        );
      return;
    }
    const prompt = body.messages.map((message: { content: string }) => message.content).join("\n");
    const content = modelAnswer(prompt);
    // The OpenAI chat-completions answer shape.
    response.writeHead(200, { "content-type": "application/json" }).end(
      JSON.stringify({
        id: "chatcmpl-standin",
        object: "chat.completion",
        created: Math.floor(Date.now() / 1000),
        model: body.model,
        choices: [
          { index: 0, message: { role: "assistant", content }, logprobs: null, finish_reason: "stop" },
        ],
        usage: { prompt_tokens: prompt.length / 4, completion_tokens: content.length / 4, total_tokens: 0 },
      }),
    );
  });

  return {
    searchUrl: search.url,
    modelUrl: `${model.url}/v1`,
    pagesUrl: pages.url,
    get searches() {
      return state.searches;
    },
    get pageRequests() {
      return state.pageRequests;
    },
    get modelRequests() {
      return state.modelRequests;
    },
    get hangModel() {
      return state.hangModel;
    },
    set hangModel(value: number) {
      state.hangModel = value;
    },
    get failModel() {
      return state.failModel;
    },
    set failModel(value: number) {
      state.failModel = value;
    },
    get failSearch() {
      return state.failSearch;
    },
    set failSearch(value: number) {
      state.failSearch = value;
    },
    get refuseMaxTokens() {
      return state.refuseMaxTokens;
    },
    set refuseMaxTokens(value: boolean) {
      state.refuseMaxTokens = value;
    },
    nextModelRequest: () => new Promise<void>((resolve) => state.waiters.push(resolve)),
    articleUrls,
    async stop() {
      for (const { server } of [pages, search, model]) {
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
      }
    },
  };
}

/**
 * The service settings that point research at the stand-ins: search, pages on 127.0.0.1 (which the
 * fetcher may reach only because their host:port is allowed here, no other port of 127.0.0.1; see
 * research-brief-ssrf.test.ts), the model
 * unless `withModel` is false (extractive briefs), and a job lease when given (short, so a killed
 * worker's job is taken again soon).
 */
export const researchEnv = (
  standIns: StandIns,
  options: { withModel?: boolean; leaseSeconds?: string } = {},
): Record<string, string> => ({
  RESEARCH_SEARCH_PROVIDER: "searxng",
  RESEARCH_SEARCH_URL: standIns.searchUrl,
  RESEARCH_FETCH_ALLOW_HOSTS: new URL(standIns.pagesUrl).host,
  ...(options.withModel === false
    ? {}
    : { RESEARCH_LLM_BASE_URL: standIns.modelUrl, RESEARCH_LLM_MODEL: "standin-model-1" }),
  ...(options.leaseSeconds ? { JOB_LEASE_SECONDS: options.leaseSeconds } : {}),
});
