import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { devPrivateKey } from "../../src/chain/dev-accounts.ts";
import { createPayer, paymentReceipt } from "../../src/client/paying-fetch.ts";
import { clinicalTrialsQuery } from "../../src/operations/clinical-trials-query/index.ts";
import { jsonPost, startTestService, type TestService, usdcBalances } from "../helpers/service.ts";

const PRICE = 50_000n; // USD 0.05 in USDC atomic units

describe("clinical-trials-query on the local chain (the bundled sample)", () => {
  let service: TestService;
  let balanceOf: ReturnType<typeof usdcBalances>;
  const payer = createPayer(devPrivateKey(5));
  const url = () => `${service.url}/v1/clinical-trials-query`;

  beforeAll(async () => {
    service = await startTestService({}, { operations: [clinicalTrialsQuery] });
    balanceOf = usdcBalances(service.localChain?.rpcUrl as string);
  });
  afterAll(async () => {
    await service?.stop();
  });

  it("with no database configured, the service builds the sample at <DATA_DIR>/clinical-trials.sqlite", () => {
    expect(service.config.clinicalTrials.dbPath).toBe(path.join(service.dataDir, "clinical-trials.sqlite"));
    expect(fs.existsSync(service.config.clinicalTrials.dbPath)).toBe(true);
  });

  it("a paid query charges exactly USD 0.05 once and answers items, a cursor and the dataset totals", async () => {
    const [payerBefore, payToBefore] = [await balanceOf(payer.address), await balanceOf(service.payTo)];
    const response = await payer.fetch(url(), jsonPost({ intervention: "placebo", limit: 2 }));
    expect(response.status).toBe(200);
    const body = await response.json();
    expect(body).toMatchObject({
      count: 2,
      total: 3,
      nextCursor: expect.any(String),
      dataset: {
        kind: "sample",
        sample: true,
        snapshotDate: "2023-11-15",
        studies: 5,
        endpoints: 63,
        measurements: 230,
        analyses: 41,
      },
    });
    expect(body.items.map((item: { nctId: string }) => item.nctId)).toEqual(["NCT02552212", "NCT02210780"]);
    expect(body.items[0].sourceUrl).toBe("https://clinicaltrials.gov/study/NCT02552212");
    expect(body.items[0].primaryOutcomes[0].analyses[0]).toMatchObject({
      pValue: 0.001,
      pValueRaw: "<0.001",
    });
    const receipt = paymentReceipt(response);
    expect(receipt).toMatchObject({ success: true, network: "eip155:8453" });
    expect(receipt?.payer?.toLowerCase()).toBe(payer.address.toLowerCase());
    expect(await balanceOf(payer.address)).toBe(payerBefore - PRICE);
    expect(await balanceOf(service.payTo)).toBe(payToBefore + PRICE);

    // The next page, paid again, carries on after the last item.
    const next = await payer.fetch(
      url(),
      jsonPost({ intervention: "placebo", limit: 2, cursor: body.nextCursor }),
    );
    expect(next.status).toBe(200);
    const nextBody = await next.json();
    expect(nextBody).toMatchObject({ count: 1, total: 3, nextCursor: null });
    expect(nextBody.items[0].nctId).toBe("NCT00763412");
    expect(await balanceOf(payer.address)).toBe(payerBefore - 2n * PRICE);
  });

  // The money rules of a 400 (before the 402, a payment sent with it not taken): test/contract/paid-operations.
  it("a malformed cursor, an unknown phase and a query of no letter are 400s naming their pointers", async () => {
    for (const [body, pointer, message] of [
      [{ query: "placebo", cursor: "garbage" }, "/cursor", "malformed cursor"],
      [{ phase: "Phase 9" }, "/phase", 'unknown phase "Phase 9"; use one of: EARLY_PHASE1, PHASE1'],
      [{ query: "***" }, "/query", "query must contain a letter or a digit"],
    ] as const) {
      const response = await fetch(url(), jsonPost(body));
      expect(response.status).toBe(400);
      expect((await response.json()).errors).toEqual([
        { pointer, message: expect.stringContaining(message) },
      ]);
    }
  });

  it("before payment, the 402 terms, OpenAPI, x402 manifest and catalog name the loaded sample of 5 studies (issue 23)", async () => {
    const before = await balanceOf(payer.address);
    const response = await fetch(url(), jsonPost({ startedAfter: "2020-01-01" }));
    expect(response.status).toBe(402);
    const terms = await response.json();
    const said =
      "Query trial-level clinical results summaries: a sample of 5 studies (63 endpoints, 230 measurements, " +
      "41 analyses; a sample loaded from a folder of study records, not the full index), as of 2023-11-15 (registry copies of 2023-11-15 to 2024-06-10)";
    expect(terms.resource.description).toBe(said);
    const header = JSON.parse(
      Buffer.from(response.headers.get("payment-required") ?? "", "base64").toString(),
    );
    expect(header.resource.description).toBe(said);
    const manifest = await (await fetch(`${service.url}/.well-known/x402`)).json();
    const resource = manifest.items.find((r: { resource: string }) =>
      r.resource.endsWith("/v1/clinical-trials-query"),
    );
    expect(resource.description).toBe(said);
    const openapi = await (await fetch(`${service.url}/openapi.json`)).json();
    const operation = openapi.paths["/v1/clinical-trials-query"].post;
    expect(operation.summary).toBe(said);
    expect(operation.description).toMatch(/^Loaded now: a sample of 5 studies /);
    const catalog = await (await fetch(`${service.url}/catalog.json`)).json();
    const entry = catalog.operations.find((o: { id: string }) => o.id === "clinical-trials-query");
    expect(entry.summary).toBe(said);
    // Nothing anywhere promises studies started on or after 2020-01-01 of this database.
    for (const text of [
      JSON.stringify(terms),
      JSON.stringify(resource),
      JSON.stringify(operation),
      JSON.stringify(entry),
    ]) {
      expect(text).not.toMatch(/started on or after 2020-01-01/);
    }
    expect(await balanceOf(payer.address)).toBe(before);
  });

  it("the catalog entry shows the dataset totals and says it is a sample; /readyz names it", async () => {
    const catalog = await (await fetch(`${service.url}/catalog.json`)).json();
    const entry = catalog.operations.find(
      (operation: { id: string }) => operation.id === "clinical-trials-query",
    );
    expect(entry).toMatchObject({
      available: true,
      dataset: { kind: "sample", sample: true, studies: 5, endpoints: 63, measurements: 230, analyses: 41 },
    });
    const ready = await (await fetch(`${service.url}/readyz`)).json();
    expect(JSON.stringify(ready)).toContain("ok (sample: 5 studies, snapshot 2023-11-15)");
  });
});
