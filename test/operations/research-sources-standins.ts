import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";

/**
 * Stand-ins on 127.0.0.1 for Wikipedia's Action API and Crossref's REST API that replay recorded
 * answers (test/fixtures/research/, described in its SOURCES.md), never made-up shapes:
 *
 * - Wikipedia `GET /w/api.php?action=query&list=search…` → mediawiki-search-01.json (enwiki's search
 *   for "Python programming", whatever was searched);
 * - `GET /w/api.php?action=query&prop=extracts…&titles=T` → the recording for T: "Python (programming
 *   language)" (extracts-01 merged with info-01, see pythonArticle), "Physics" (extracts-02), "Area"
 *   (extracts-03), "2005 Azores subtropical storm" (extracts-04). Any other title is answered 404: a
 *   limit of the stand-in (there is no recording for it), which the client treats like any source it
 *   cannot read;
 * - Crossref `GET /works?query=…` → crossref-works-query-01.json; `GET /works/10.1038/srep16696` →
 *   crossref-work-01.json; `GET /works/10.1371/journal.pone.0033693` → crossref-work-02.json (no
 *   abstract); any other DOI → 404 "Resource not found." as Crossref answers it.
 *
 * Every request is recorded (path, query, User-Agent, arrival and answer times) so tests can check
 * the access rules: one request at a time per host, the User-Agent, Crossref's mailto. Each answer
 * waits `delayMs` first, so requests that overlapped would show.
 *
 * `hold()` makes both servers keep their answers, as a stalled upstream does, until it is released (an
 * answer is chosen when it is sent, so an `outage` set meanwhile fails the held requests):
 * the research jobs that reach them stay running, so a test can keep every worker busy (and the jobs
 * queued behind them unclaimed) without a switch in the service.
 */

const FIXTURES = new URL("../fixtures/research/", import.meta.url);

/** A recorded answer, as the bytes on file. */
export const fixtureText = (name: string) => fs.readFileSync(new URL(name, FIXTURES), "utf8");
/** A recorded answer, parsed. */
export const fixture = (name: string): any => JSON.parse(fixtureText(name));

/**
 * "Python (programming language)" as one `prop=extracts|revisions|info` answer. extracts-01 and
 * info-01 are the same page (id 23862) recorded one second apart on 2026-03-29 by the same test suite,
 * one for prop=extracts, one for prop=info; the real API answers both props in one call, so the
 * page here is info-01's page with extracts-01's extract, and info-01's `warnings` (its deprecation
 * notices) and extracts-01's `normalized`. Neither recording has `revisions`: the revision cited is
 * info's `lastrevid` (1345336232) and the date its `touched`.
 */
export function pythonArticle(): string {
  const extracts = fixture("mediawiki-extracts-01.json");
  const info = fixture("mediawiki-info-01.json");
  return JSON.stringify({
    batchcomplete: "",
    warnings: info.warnings,
    query: {
      normalized: extracts.query.normalized,
      pages: { "23862": { ...info.query.pages["23862"], extract: extracts.query.pages["23862"].extract } },
    },
  });
}

const ARTICLES: Record<string, () => string> = {
  "Python (programming language)": pythonArticle,
  Physics: () => fixtureText("mediawiki-extracts-02.json"),
  Area: () => fixtureText("mediawiki-extracts-03.json"),
  "2005 Azores subtropical storm": () => fixtureText("mediawiki-extracts-04.json"),
};

const WORKS: Record<string, string> = {
  "10.1038/srep16696": "crossref-work-01.json",
  "10.1371/journal.pone.0033693": "crossref-work-02.json",
};

export interface RecordedRequest {
  server: "wikipedia" | "crossref";
  path: string;
  query: Record<string, string>;
  userAgent: string;
  arrivedAt: number;
  answeredAt: number;
}

export interface SourceStandIns {
  /** RESEARCH_WIKIPEDIA_URL for the stand-in: http://127.0.0.1:<port>/w/api.php */
  wikipediaUrl: string;
  /** RESEARCH_CROSSREF_URL for the stand-in. */
  crossrefUrl: string;
  requests: RecordedRequest[];
  /** Milliseconds each answer waits (default 15). */
  delayMs: number;
  /** The next N Crossref requests are answered 503. */
  failCrossref: number;
  /** While true, both servers answer every request 503 (an outage: the briefs asked now fail). */
  outage: boolean;
  /** Keeps every answer from now on until the returned function is called (then all are sent). */
  hold(): () => void;
  /** How many requests are waiting on a hold now. */
  readonly waiting: number;
  stop(): Promise<void>;
}

async function listen(handler: http.RequestListener): Promise<{ server: http.Server; url: string }> {
  const server = http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

const UNAVAILABLE = { status: 503, type: "text/html", body: "<html><body>Service Unavailable</body></html>" };

export async function startSourceStandIns(): Promise<SourceStandIns> {
  const state = {
    requests: [] as RecordedRequest[],
    delayMs: 15,
    failCrossref: 0,
    held: undefined as Promise<void> | undefined,
    waiting: 0,
    outage: false,
  };

  const serve =
    (
      server: RecordedRequest["server"],
      route: (url: URL) => { status: number; type: string; body: string },
    ) =>
    (request: http.IncomingMessage, response: http.ServerResponse) => {
      const arrivedAt = performance.now();
      const url = new URL(request.url ?? "/", "http://127.0.0.1");
      const held = state.held;
      if (held) state.waiting++;
      const send = () =>
        setTimeout(() => {
          const answer = state.outage ? UNAVAILABLE : route(url);
          state.requests.push({
            server,
            path: url.pathname,
            query: Object.fromEntries(url.searchParams),
            userAgent: request.headers["user-agent"] ?? "",
            arrivedAt,
            answeredAt: performance.now(),
          });
          response.writeHead(answer.status, { "content-type": answer.type }).end(answer.body);
        }, state.delayMs);
      if (!held) send();
      else
        void held.then(() => {
          state.waiting--;
          send();
        });
    };

  const json = (body: string) => ({ status: 200, type: "application/json; charset=utf-8", body });
  const notFound = (body: string) => ({ status: 404, type: "text/plain;charset=utf-8", body });

  const wikipedia = await listen(
    serve("wikipedia", (url) => {
      const params = url.searchParams;
      if (url.pathname !== "/w/api.php" || params.get("action") !== "query") return notFound("no such API");
      if (params.get("list") === "search") return json(fixtureText("mediawiki-search-01.json"));
      if (params.get("prop")?.split("|").includes("extracts")) {
        const title = (params.get("titles") ?? "").replace(/_/g, " ");
        const article = ARTICLES[title];
        return article ? json(article()) : notFound(`the stand-in has no recording for "${title}"`);
      }
      return notFound("not a request the stand-in replays");
    }),
  );

  const crossref = await listen(
    serve("crossref", (url) => {
      if (state.failCrossref > 0) {
        state.failCrossref--;
        return UNAVAILABLE;
      }
      if (url.pathname === "/works" && url.searchParams.has("query")) {
        return json(fixtureText("crossref-works-query-01.json"));
      }
      const doi = url.pathname.startsWith("/works/") ? decodeURIComponent(url.pathname.slice(7)) : "";
      const file = WORKS[doi.toLowerCase()];
      return file ? json(fixtureText(file)) : notFound("Resource not found.");
    }),
  );

  return {
    wikipediaUrl: `${wikipedia.url}/w/api.php`,
    crossrefUrl: crossref.url,
    get requests() {
      return state.requests;
    },
    get delayMs() {
      return state.delayMs;
    },
    set delayMs(value: number) {
      state.delayMs = value;
    },
    get failCrossref() {
      return state.failCrossref;
    },
    set failCrossref(value: number) {
      state.failCrossref = value;
    },
    get outage() {
      return state.outage;
    },
    set outage(value: boolean) {
      state.outage = value;
    },
    hold() {
      let release = () => {};
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      state.held = held;
      return () => {
        if (state.held === held) state.held = undefined;
        release();
      };
    },
    get waiting() {
      return state.waiting;
    },
    async stop() {
      for (const { server } of [wikipedia, crossref]) {
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
      }
    },
  };
}

/** Whether a server's requests never overlapped: each arrived after the one before it was answered. */
export function oneAtATime(requests: RecordedRequest[]): boolean {
  const sorted = [...requests].sort((a, b) => a.arrivedAt - b.arrivedAt);
  return sorted.every(
    (request, index) => index === 0 || request.arrivedAt >= (sorted[index - 1] as RecordedRequest).answeredAt,
  );
}
