import { randomUUID } from "node:crypto";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { devPrivateKey } from "../../src/chain/dev-accounts.ts";
import { researchBrief } from "../../src/operations/research-brief/index.ts";
import { startTestService, type TestService, usdcBalances } from "../helpers/service.ts";
import { type SourceStandIns, startSourceStandIns } from "../operations/research-sources-standins.ts";
import { callTool, connectMcp, payTool, toolPayer } from "./paying-mcp-client.ts";

const PRICE = 5_000_000n;

/** The research brief as a tool: it answers its queued job, read with the free get_job tool. */
describe("research-brief through MCP, with get_job", () => {
  let standIns: SourceStandIns;
  let service: TestService;
  let client: Client;
  let balanceOf: ReturnType<typeof usdcBalances>;
  const payer = toolPayer(devPrivateKey(5));

  beforeAll(async () => {
    standIns = await startSourceStandIns();
    service = await startTestService(
      {
        RESEARCH_WIKIPEDIA_URL: standIns.wikipediaUrl,
        RESEARCH_CROSSREF_URL: standIns.crossrefUrl,
        RESEARCH_CONTACT: "research-ops@example.org",
      },
      { operations: [researchBrief] },
    );
    balanceOf = usdcBalances(service.localChain?.rpcUrl as string);
    client = await connectMcp(service.url);
  });
  afterAll(async () => {
    await client?.close();
    await service?.stop();
    await standIns?.stop();
  });

  it("a paid brief answers its job; get_job reads it until delivered; the held payment is settled once", async () => {
    const before = [await balanceOf(payer.address), await balanceOf(service.payTo)] as const;
    const question = "What is the Python programming language used for in ecological research?";
    const { result } = await payTool(client, payer, "research-brief", {
      question,
      requiredSources: 3,
      maxWords: 300,
    });
    expect(result.isError, JSON.stringify(result).slice(0, 400)).toBeFalsy();
    const accepted = result.structuredContent as { jobId: string; status: string; statusUrl: string };
    expect(accepted).toMatchObject({
      status: "queued",
      statusUrl: `${service.url}/v1/jobs/${accepted.jobId}`,
    });

    let job: Record<string, unknown> | undefined;
    for (let look = 0; look < 300; look++) {
      const read = await callTool(client, "get_job", { id: accepted.jobId });
      expect(read.isError).toBeFalsy();
      job = read.structuredContent;
      const payment = job?.payment as { state?: string } | undefined;
      if (job?.status === "failed" || (job?.status === "succeeded" && payment?.state === "settled")) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(job?.status, JSON.stringify(job?.error)).toBe("succeeded");
    expect(job?.payment).toMatchObject({ state: "settled", amount: String(PRICE) });
    // The same answer the route gives.
    expect(await (await fetch(accepted.statusUrl)).json()).toEqual(job);
    expect(await balanceOf(payer.address)).toBe(before[0] - PRICE);
    expect(await balanceOf(service.payTo)).toBe(before[1] + PRICE);
  });

  it("get_job is free and answers the route's errors: a malformed id by its pointer, an unknown job 404", async () => {
    const malformed = await callTool(client, "get_job", { id: "not-a-uuid" });
    expect(malformed).toMatchObject({
      isError: true,
      structuredContent: { status: 400, errors: [{ pointer: "/id" }] },
    });
    const unknown = await callTool(client, "get_job", { id: randomUUID() });
    expect(unknown).toMatchObject({ isError: true, structuredContent: { status: 404 } });
  });
});
