import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createChatModel,
  REASONING_ALLOWANCE_TOKENS,
  stripReasoning,
} from "../../src/operations/research-brief/model.ts";
import { ProviderError } from "../../src/operations/research-brief/retry.ts";

/** Real recorded bodies (see test/fixtures/research/SOURCES.md). */
const fixture = (name: string) =>
  JSON.parse(fs.readFileSync(new URL(`../fixtures/research/${name}`, import.meta.url), "utf8"));
const UNSUPPORTED_MAX_TOKENS = fixture("openai-chat-error-unsupported-max-tokens.json");
const O3_MINI_COMPLETION = fixture("openai-chat-completion-reasoning-o3-mini.json");
/** The same shape OpenAI answers when a reasoning model is sent a temperature. */
const UNSUPPORTED_TEMPERATURE = {
  error: {
    message:
      "Unsupported value: 'temperature' does not support 0.2 with this model. Only the default (1) value is supported.",
    type: "invalid_request_error",
    param: "temperature",
    code: "unsupported_value",
  },
};

const completion = (content: string | null, extra: object = {}) => ({
  id: "chatcmpl-1",
  object: "chat.completion",
  created: 1,
  model: "m",
  choices: [{ index: 0, message: { role: "assistant", content, ...extra }, finish_reason: "stop" }],
});

let server: http.Server;
let base: string;
let bodies: Record<string, unknown>[] = [];
let answer: (body: Record<string, unknown>) => { status: number; body: unknown } = () => ({
  status: 500,
  body: {},
});

beforeAll(async () => {
  server = http.createServer((request, response) => {
    let text = "";
    request.on("data", (chunk) => (text += chunk));
    request.on("end", () => {
      const body = JSON.parse(text);
      bodies.push(body);
      const reply = answer(body);
      response
        .writeHead(reply.status, { "content-type": "application/json" })
        .end(JSON.stringify(reply.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

/** A stand-in reasoning model: refuses max_tokens (or temperature) with OpenAI's 400, answers the other form. */
const reasoningModel =
  (refusal: unknown) =>
  (body: Record<string, unknown>): { status: number; body: unknown } =>
    "max_tokens" in body || "temperature" in body
      ? { status: 400, body: refusal }
      : { status: 200, body: O3_MINI_COMPLETION };

describe("any OpenAI-compatible model", () => {
  it("sends max_tokens and temperature by default, and reads a real o3-mini completion", async () => {
    bodies = [];
    answer = () => ({ status: 200, body: O3_MINI_COMPLETION });
    const model = createChatModel({ baseUrl: base, model: "classic-1" });
    const text = await model.complete([{ role: "user", content: "What is the capital of Mexico?" }], {
      maxTokens: 100,
    });
    expect(text).toBe(
      "The capital of Mexico is Mexico City. It is not only the seat of the federal government but also a major cultural, political, and economic center in the country.",
    );
    expect(bodies).toEqual([
      {
        model: "classic-1",
        messages: [{ role: "user", content: "What is the capital of Mexico?" }],
        temperature: 0.2,
        max_tokens: 100,
      },
    ]);
  });

  it("a 400 refusing max_tokens: retried once with max_completion_tokens and no temperature, then remembered", async () => {
    bodies = [];
    answer = reasoningModel(UNSUPPORTED_MAX_TOKENS);
    const model = createChatModel({ baseUrl: base, model: "o3-mini" });
    const first = await model.complete([{ role: "user", content: "q" }], { maxTokens: 100 });
    expect(first).toContain("Mexico City");
    expect(bodies).toEqual([
      { model: "o3-mini", messages: [{ role: "user", content: "q" }], temperature: 0.2, max_tokens: 100 },
      {
        model: "o3-mini",
        messages: [{ role: "user", content: "q" }],
        max_completion_tokens: 100 + REASONING_ALLOWANCE_TOKENS,
      },
    ]);
    // Later calls (also from another instance for the same model) use the accepted form directly.
    await model.complete([{ role: "user", content: "q2" }], { maxTokens: 50 });
    await createChatModel({ baseUrl: base, model: "o3-mini" }).complete([], { maxTokens: 50 });
    expect(bodies.slice(2).map((body) => Object.keys(body).sort())).toEqual([
      ["max_completion_tokens", "messages", "model"],
      ["max_completion_tokens", "messages", "model"],
    ]);
  });

  it("a 400 refusing temperature (code unsupported_value) is handled the same way", async () => {
    bodies = [];
    answer = reasoningModel(UNSUPPORTED_TEMPERATURE);
    const model = createChatModel({ baseUrl: base, model: "gpt-5-mini" });
    expect(await model.complete([], { maxTokens: 10 })).toContain("Mexico City");
    expect(bodies.map((body) => "temperature" in body)).toEqual([true, false]);
  });

  it("any other 400 is not retried and carries the server's status and body", async () => {
    bodies = [];
    const invalid = {
      error: {
        message: "Invalid value for 'messages'.",
        type: "invalid_request_error",
        param: "messages",
        code: null,
      },
    };
    answer = () => ({ status: 400, body: invalid });
    const model = createChatModel({ baseUrl: base, model: "classic-2" });
    const error = await model.complete([], { maxTokens: 10 }).catch((caught) => caught);
    expect(error).toBeInstanceOf(ProviderError);
    expect(error.retryable).toBe(false);
    expect(error.answer).toEqual({ status: 400, body: invalid });
    expect(bodies).toHaveLength(1);
  });

  it("a reasoning model that also refuses the second form fails after one retry", async () => {
    bodies = [];
    answer = () => ({ status: 400, body: UNSUPPORTED_MAX_TOKENS });
    const error = await createChatModel({ baseUrl: base, model: "odd-1" })
      .complete([], { maxTokens: 10 })
      .catch((caught) => caught);
    expect(error.message).toContain("answered 400");
    expect(bodies).toHaveLength(2);
  });

  it("strips reasoning blocks from the answer; a refusal is the provider's failure", async () => {
    bodies = [];
    answer = () => ({
      status: 200,
      body: completion("<think>The user wants X.\nLet me see.</think>\n\nX is Y [1]."),
    });
    const model = createChatModel({ baseUrl: base, model: "r1-distill" });
    expect(await model.complete([], { maxTokens: 10 })).toBe("X is Y [1].");

    answer = () => ({ status: 200, body: completion(null, { refusal: "I can't help with that." }) });
    const refused = await model.complete([], { maxTokens: 10 }).catch((caught) => caught);
    expect(refused.message).toBe("model r1-distill: refused to answer: I can't help with that.");

    answer = () => ({ status: 200, body: completion("<think>still thinking when the tokens ran out") });
    const empty = await model.complete([], { maxTokens: 10 }).catch((caught) => caught);
    expect(empty.message).toBe("model r1-distill: answered an empty message");
  });
});

describe("stripReasoning", () => {
  it("<think> and <thinking> blocks, an unclosed leading block, and thinking whose opening tag was swallowed", () => {
    expect(stripReasoning("<think>a\nb</think>Answer [1].")).toBe("Answer [1].");
    expect(stripReasoning("<thinking>plan</thinking>\nAnswer. <think>more</think>Rest.")).toBe(
      "Answer. Rest.",
    );
    expect(stripReasoning("<think>never closed, cut off")).toBe("");
    expect(stripReasoning("reasoning without its opening tag</think>\n\nAnswer [2].")).toBe("Answer [2].");
    expect(stripReasoning("An answer that talks about <b>tags</b> [1].")).toBe(
      "An answer that talks about <b>tags</b> [1].",
    );
  });
});
