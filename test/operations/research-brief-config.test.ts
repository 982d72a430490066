import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config.ts";

const problems = (env: Record<string, string>) => {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  return [];
};

describe("research and job settings", () => {
  it("default to no provider, no model, a week of retention and an in-process worker", () => {
    const config = loadConfig({});
    expect(config.research).toEqual({ search: undefined, llm: undefined, fetchAllowHosts: [] });
    expect(config.jobs).toEqual({
      retentionMs: 7 * 86_400_000,
      leaseMs: 60_000,
      maxAttempts: 3,
      workerConcurrency: 2,
      inProcessWorker: true,
    });
  });

  it("read providers, their default endpoints, the model and the fetch allow-list", () => {
    const config = loadConfig({
      RESEARCH_SEARCH_PROVIDER: "brave",
      RESEARCH_SEARCH_API_KEY: "brave-key",
      RESEARCH_LLM_BASE_URL: "https://llm.example/v1/",
      RESEARCH_LLM_MODEL: "some-model",
      RESEARCH_FETCH_ALLOW_HOSTS: " Intranet.Example , 10.0.0.5 ,",
      IN_PROCESS_WORKER: "false",
      JOB_RETENTION_DAYS: "30",
    });
    expect(config.research).toEqual({
      search: {
        provider: "brave",
        url: "https://api.search.brave.com/res/v1/web/search",
        apiKey: "brave-key",
      },
      llm: { baseUrl: "https://llm.example/v1", apiKey: undefined, model: "some-model" },
      fetchAllowHosts: ["intranet.example", "10.0.0.5"],
    });
    expect(config.jobs.inProcessWorker).toBe(false);
    expect(config.jobs.retentionMs).toBe(30 * 86_400_000);
    expect(
      loadConfig({ RESEARCH_SEARCH_PROVIDER: "tavily", RESEARCH_SEARCH_API_KEY: "k" }).research.search?.url,
    ).toBe("https://api.tavily.com/search");
  });

  it("refuse incomplete or unsafe settings, one line each", () => {
    expect(problems({ RESEARCH_SEARCH_PROVIDER: "searxng" })).toEqual([
      "RESEARCH_SEARCH_URL: required when RESEARCH_SEARCH_PROVIDER=searxng (your instance's base URL)",
    ]);
    expect(problems({ RESEARCH_SEARCH_PROVIDER: "tavily" })).toEqual([
      "RESEARCH_SEARCH_API_KEY: required when RESEARCH_SEARCH_PROVIDER=tavily",
    ]);
    expect(
      problems({
        RESEARCH_SEARCH_PROVIDER: "google",
        RESEARCH_LLM_BASE_URL: "https://llm.example/v1",
        JOB_RETENTION_DAYS: "3",
        IN_PROCESS_WORKER: "yes",
      }),
    ).toEqual([
      expect.stringMatching(/^RESEARCH_SEARCH_PROVIDER: /),
      "JOB_RETENTION_DAYS: must be at least 7 (results are kept a week)",
      "IN_PROCESS_WORKER: must be true or false",
      "RESEARCH_LLM_MODEL: required when RESEARCH_LLM_BASE_URL is set",
    ]);
  });
});
