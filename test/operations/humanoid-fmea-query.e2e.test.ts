import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { devPrivateKey } from "../../src/chain/dev-accounts.ts";
import { createPayer, paymentReceipt } from "../../src/client/paying-fetch.ts";
import { humanoidFmeaQuery } from "../../src/operations/humanoid-fmea-query/index.ts";
import { jsonPost, startTestService, type TestService, usdcBalances } from "../helpers/service.ts";

const PRICE = 50_000n; // USD 0.05 in USDC atomic units

describe("humanoid-fmea-query on the local chain", () => {
  let service: TestService;
  let balanceOf: ReturnType<typeof usdcBalances>;
  const payer = createPayer(devPrivateKey(5));
  const url = () => `${service.url}/v1/humanoid-fmea-query`;

  beforeAll(async () => {
    service = await startTestService({}, { operations: [humanoidFmeaQuery] });
    balanceOf = usdcBalances(service.localChain?.rpcUrl as string);
  });
  afterAll(async () => {
    await service?.stop();
  });

  it("a paid query charges exactly USD 0.05 once and answers ranked items, total and facets", async () => {
    const [payerBefore, payToBefore] = [await balanceOf(payer.address), await balanceOf(service.payTo)];
    const response = await payer.fetch(
      url(),
      jsonPost({ text: "emergency stop fall", minSeverity: 9, standard: "IEC 60204-1", limit: 2 }),
    );
    expect(response.status).toBe(200);
    const body = await response.json();
    expect(body.catalogueVersion).toBe("2.3.0");
    expect(body.count).toBe(2);
    expect(body.items[0]).toMatchObject({
      id: "HFM-SAF-02",
      subsystem: "safety-control",
      severity: 10,
      priorityRule: "utility402-strict-1",
      actionPriority: "H",
      actionPriorityAiagVda2019: "H",
      hazard: { type: "mechanical", harm: "robot-falls-onto-person" },
    });
    expect(body.items[0].safetyFunctions).toContainEqual(
      expect.objectContaining({ id: "SF-ESTOP", stopCategory: 1, requiredPL: "d" }),
    );
    expect(body.items[0].score).toBeGreaterThan(body.items[1].score);
    expect(body.items[0].references).toContainEqual(
      expect.objectContaining({ standard: "IEC 60204-1:2016" }),
    );
    expect(body.total).toBeGreaterThanOrEqual(2);
    const sum = (counts: Record<string, number>) => Object.values(counts).reduce((a, b) => a + b, 0);
    expect(sum(body.facets.subsystem)).toBe(body.total);
    expect(sum(body.facets.actionPriority)).toBe(body.total);

    const receipt = paymentReceipt(response);
    expect(receipt).toMatchObject({ success: true, network: "eip155:8453" });
    expect(receipt?.transaction).toMatch(/^0x[0-9a-f]{64}$/);
    expect(await balanceOf(payer.address)).toBe(payerBefore - PRICE);
    expect(await balanceOf(service.payTo)).toBe(payToBefore + PRICE);
  });

  // The money rules of a 400 (before the 402, a payment sent with it not taken): test/contract/paid-operations.
  it("an unknown subsystem or standard is a 400 listing the valid values", async () => {
    for (const [body, pointer, listed] of [
      [{ subsystem: "legs" }, "/subsystem", "balance-locomotion"],
      [{ standard: "ISO 9999" }, "/standard", "ISO 13849-1:2023"],
      [{ standard: "ISO 13855:2010" }, "/standard", "ISO 13855:2024"],
    ] as const) {
      const response = await fetch(url(), jsonPost(body));
      expect(response.status).toBe(400);
      expect((await response.json()).errors).toEqual([{ pointer, message: expect.stringContaining(listed) }]);
    }
  });
});
