import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { devPrivateKey } from "../../src/chain/dev-accounts.ts";
import { createPayer } from "../../src/client/paying-fetch.ts";
import { openapiAudit } from "../../src/operations/openapi-audit/index.ts";
import {
  closeSharedAuditPool,
  DEFAULT_AUDIT_POOL_OPTIONS,
  sharedAuditPool,
} from "../../src/operations/openapi-audit/pool.ts";
import { jsonPost, startTestService, type TestService, usdcBalances } from "../helpers/service.ts";
import { catastrophic } from "./hostile-inputs.ts";

/**
 * Issue 16, finding 6, through the service and the local chain: one payer's six audits of contracts
 * whose patterns backtrack catastrophically do not keep another payer's trivial audit waiting (the
 * payer of each paid call reaches the audit pool as its client), and each of them is an ordinary
 * audit now (linear-time patterns): answered, and charged, instead of a 422 after 15 s.
 */

const AUDIT_PRICE = 50_000n; // USD 0.05 in USDC atomic units

async function until(condition: () => boolean, what: string): Promise<void> {
  for (let waited = 0; waited < 120; waited++) {
    if (condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`still waiting for ${what}`);
}

describe("openapi-audit: a payer's catastrophic contracts do not starve another payer", () => {
  let service: TestService;
  let balanceOf: ReturnType<typeof usdcBalances>;
  const hostile = createPayer(devPrivateKey(4));
  const other = createPayer(devPrivateKey(5));

  beforeAll(async () => {
    service = await startTestService({}, { operations: [openapiAudit] });
    balanceOf = usdcBalances(service.localChain?.rpcUrl as string);
    // The service's own pool, its workers started (their start is not what this test is about).
    await sharedAuditPool().warm();
  });
  afterAll(async () => {
    await service?.stop();
    await closeSharedAuditPool();
  });

  it("six catastrophic audits from one payer, a trivial one from another: the trivial one is answered while they wait", async () => {
    const pool = sharedAuditPool();
    const url = `${service.url}/v1/openapi-audit`;
    const [hostileBefore, otherBefore] = [await balanceOf(hostile.address), await balanceOf(other.address)];
    let hostileAnswered = 0;
    const hostileCalls = Array.from({ length: 6 }, async (_, i) => {
      const response = await hostile.fetch(url, jsonPost({ contract: catastrophic(i) }));
      hostileAnswered++;
      return { status: response.status, body: await response.json() };
    });
    // Awaited below; if an assertion fails first, the service stops under them: not an unhandled rejection.
    for (const call of hostileCalls) call.catch(() => {});

    // The hostile payer's audits reach the pool as its own: at most its cap run, the others wait.
    await until(() => pool.stats.queued > 0, "the hostile payer's audits to queue");
    expect(pool.stats.busy).toBe(DEFAULT_AUDIT_POOL_OPTIONS.maxRunningPerClient);

    const trivial = await other.fetch(
      url,
      jsonPost({ contract: { openapi: "3.1.0", info: { title: "Trivial", version: "1.0.0" }, paths: {} } }),
    );
    expect(trivial.status).toBe(200);
    expect(await trivial.json()).toMatchObject({ openapiVersion: "3.1.0" });
    expect(hostileAnswered).toBeLessThan(6);

    // Each catastrophic audit is an ordinary audit now: answered (not a 422 after 15 s), and paid for.
    for (const { status, body } of await Promise.all(hostileCalls)) {
      expect(status).toBe(200);
      const pointers = body.findings
        .filter((finding: { ruleId: string }) => /valid.*example/.test(finding.ruleId))
        .map((finding: { pointer: string }) => finding.pointer);
      expect(pointers).toEqual([
        "/paths/~1names/post/requestBody/content/application~1json/example",
        "/paths/~1names/post/requestBody/content/application~1json/schema/example",
      ]);
    }
    expect(hostileBefore - (await balanceOf(hostile.address))).toBe(6n * AUDIT_PRICE);
    expect(otherBefore - (await balanceOf(other.address))).toBe(AUDIT_PRICE);
  });
});
