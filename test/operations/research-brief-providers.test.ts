import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createChatModel } from "../../src/operations/research-brief/model.ts";
import { ProviderError, withRetries } from "../../src/operations/research-brief/retry.ts";
import { createSearchProvider } from "../../src/operations/research-brief/search.ts";

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** One stand-in server; each test sets what it answers. */
let server: http.Server;
let base: string;
let seen: Seen[] = [];
let answer: (request: Seen) => { status: number; body: unknown } = () => ({ status: 500, body: {} });

beforeAll(async () => {
  server = http.createServer((request, response) => {
    let body = "";
    request.on("data", (chunk) => (body += chunk));
    request.on("end", () => {
      const entry = { method: request.method ?? "", url: request.url ?? "", headers: request.headers, body };
      seen.push(entry);
      const { status, body: reply } = answer(entry);
      response.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(reply));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

describe("search providers speak each provider's API", () => {
  it("SearXNG: GET {instance}/search?q=…&format=json, results[].url/title/content", async () => {
    seen = [];
    answer = () => ({
      status: 200,
      body: {
        query: "q",
        number_of_results: 2,
        results: [
          {
            url: "https://a.example/1",
            title: "A",
            content: "first",
            engine: "bing",
            publishedDate: "2025-01-02T00:00:00",
          },
          { url: "https://b.example/2", title: "B", content: null, engine: "brave", publishedDate: null },
        ],
        answers: [],
        corrections: [],
        infoboxes: [],
        suggestions: [],
        unresponsive_engines: [],
      },
    });
    const searxng = createSearchProvider({ provider: "searxng", url: `${base}/searx/` });
    const hits = await searxng.search("cold batteries", { count: 10 });
    expect(seen[0]?.method).toBe("GET");
    expect(seen[0]?.url).toBe("/searx/search?q=cold+batteries&format=json");
    expect(hits).toEqual([
      { url: "https://a.example/1", title: "A", snippet: "first", publishedAt: "2025-01-02T00:00:00" },
      { url: "https://b.example/2", title: "B", snippet: "" },
    ]);
  });

  it("Brave: GET …/web/search?q=&count= with X-Subscription-Token, web.results[].description", async () => {
    seen = [];
    answer = () => ({
      status: 200,
      body: {
        type: "search",
        query: { original: "cold batteries" },
        web: {
          type: "search",
          results: [
            {
              type: "search_result",
              title: "Cold <strong>batteries</strong>",
              url: "https://c.example/",
              description: "Why <strong>cold</strong> hurts",
              page_age: "2024-12-01T00:00:00",
            },
          ],
        },
      },
    });
    const brave = createSearchProvider({
      provider: "brave",
      url: `${base}/res/v1/web/search`,
      apiKey: "brave-key",
    });
    const hits = await brave.search("cold batteries", { count: 5 });
    expect(seen[0]?.url).toBe("/res/v1/web/search?q=cold+batteries&count=5");
    expect(seen[0]?.headers["x-subscription-token"]).toBe("brave-key");
    expect(seen[0]?.headers.accept).toBe("application/json");
    expect(hits).toEqual([
      {
        url: "https://c.example/",
        title: "Cold batteries",
        snippet: "Why cold hurts",
        publishedAt: "2024-12-01T00:00:00",
      },
    ]);
  });

  it("Tavily: POST /search with a bearer key and { query, max_results }, results[].content", async () => {
    seen = [];
    answer = () => ({
      status: 200,
      body: {
        query: "cold batteries",
        answer: null,
        images: [],
        results: [
          { title: "T", url: "https://t.example/", content: "tavily text", score: 0.9, raw_content: null },
        ],
        response_time: 0.5,
      },
    });
    const tavily = createSearchProvider({ provider: "tavily", url: `${base}/search`, apiKey: "tvly-key" });
    const hits = await tavily.search("cold batteries", { count: 4 });
    expect(seen[0]?.method).toBe("POST");
    expect(seen[0]?.headers.authorization).toBe("Bearer tvly-key");
    expect(JSON.parse(seen[0]?.body ?? "")).toEqual({
      query: "cold batteries",
      max_results: 4,
      search_depth: "basic",
    });
    expect(hits).toEqual([{ url: "https://t.example/", title: "T", snippet: "tavily text" }]);
  });

  it("an unexpected shape is the provider's failure, not retried", async () => {
    answer = () => ({ status: 200, body: { results: "nope" } });
    const searxng = createSearchProvider({ provider: "searxng", url: base });
    const error = await searxng.search("x", { count: 3 }).catch((e) => e);
    expect(error).toBeInstanceOf(ProviderError);
    expect(error.retryable).toBe(false);
    expect(error.message).toBe("searxng: answered an unexpected shape (at results)");
  });
});

describe("the chat-completions model and retries", () => {
  it("POSTs {base}/chat/completions with the model and messages and reads choices[0].message.content", async () => {
    seen = [];
    answer = () => ({
      status: 200,
      body: {
        id: "chatcmpl-1",
        object: "chat.completion",
        created: 1,
        model: "m",
        choices: [
          { index: 0, message: { role: "assistant", content: " The answer [1]. " }, finish_reason: "stop" },
        ],
        usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
      },
    });
    const model = createChatModel({ baseUrl: `${base}/v1`, apiKey: "sk-test", model: "m" });
    const text = await model.complete([{ role: "user", content: "hi" }], { maxTokens: 100 });
    expect(text).toBe("The answer [1].");
    expect(seen[0]?.url).toBe("/v1/chat/completions");
    expect(seen[0]?.headers.authorization).toBe("Bearer sk-test");
    expect(JSON.parse(seen[0]?.body ?? "")).toMatchObject({
      model: "m",
      messages: [{ role: "user", content: "hi" }],
      max_tokens: 100,
    });
  });

  it("5xx and 429 are retried with backoff and may recover; 401 fails at once", async () => {
    seen = [];
    let calls = 0;
    answer = () => {
      calls++;
      return calls < 3
        ? { status: calls === 1 ? 429 : 503, body: { error: { message: "busy" } } }
        : { status: 200, body: { choices: [{ message: { content: "ok" } }] } };
    };
    const model = createChatModel({ baseUrl: base, model: "m" });
    const policy = { attempts: 3, baseDelayMs: 10 };
    expect(await withRetries(() => model.complete([], { maxTokens: 10 }), policy)).toBe("ok");
    expect(calls).toBe(3);

    calls = 0;
    answer = () => {
      calls++;
      return { status: 401, body: { error: { message: "Incorrect API key provided" } } };
    };
    const error = await withRetries(() => model.complete([], { maxTokens: 10 }), policy).catch((e) => e);
    expect(error.message).toContain("model m: answered 401");
    expect(calls).toBe(1);
  });
});
