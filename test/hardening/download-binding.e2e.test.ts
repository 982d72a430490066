import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { devPrivateKey } from "../../src/chain/dev-accounts.ts";
import { createPayer } from "../../src/client/paying-fetch.ts";
import { DOWNLOAD_TOKEN_HEADER } from "../../src/payments/headers.ts";
import { buildProducts } from "../../src/products/build.ts";
import { products } from "../../src/products/index.ts";
import { startTestService, type TestService, usdcBalances } from "../helpers/service.ts";

const SLUG = "csv-json-quality-toolkit";

/** A GET from a given loopback source address (Linux routes all of 127/8 to lo): another client. */
function getFrom(localAddress: string, url: string, headers: Record<string, string>) {
  return new Promise<{ status: number; headers: http.IncomingHttpHeaders; bytes: number }>(
    (resolve, reject) => {
      const request = http.get(url, { localAddress, headers }, (response) => {
        let bytes = 0;
        response.on("data", (chunk: Buffer) => {
          bytes += chunk.length;
        });
        response.on("end", () =>
          resolve({ status: response.statusCode ?? 0, headers: response.headers, bytes }),
        );
      });
      request.on("error", reject);
    },
  );
}

/**
 * Finding 8 of the hardening review: "for two minutes anyone holding the public payment gets a product
 * file and a download token valid for the rest of the hour". The payment is public on chain once
 * settled; a sold download is now served again only to its first caller's prompt retry, or to whoever
 * holds the download token its first answer carried.
 */
describe("a sold download is bound to its first caller and its download token", () => {
  let service: TestService;
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "utility402-binding-"));
  const releasesDir = path.join(work, "releases");

  beforeAll(async () => {
    for (const outcome of await buildProducts({ releasesDir, clinicalDb: path.join(work, "none.sqlite") }, [
      SLUG,
    ])) {
      if (outcome.state === "unbuildable") throw new Error(outcome.reason);
    }
    service = await startTestService({ RELEASES_DIR: releasesDir }, { operations: products });
  }, 180_000);

  afterAll(async () => {
    await service?.stop();
    fs.rmSync(work, { recursive: true, force: true });
  });

  it("gives a chain watcher nothing, the buyer's retry the file, and the token-holder a resume", async () => {
    const url = `${service.url}/v1/products/${SLUG}`;
    const payer = createPayer(devPrivateKey(6));
    const balanceOf = usdcBalances(service.localChain?.rpcUrl as string);
    const payment = await payer.signPayment(await fetch(url));
    const before = await balanceOf(payer.address);

    const first = await getFrom("127.0.0.1", url, payment);
    expect(first.status).toBe(200);
    const token = first.headers[DOWNLOAD_TOKEN_HEADER] as string;
    expect(token).toBeTruthy();
    expect(await balanceOf(payer.address)).toBe(before - 9_000_000n);

    // Someone else with the (public) payment and no token: no file, no token.
    const watcher = await getFrom("127.0.0.2", url, payment);
    expect(watcher.status).toBe(409);
    expect(watcher.headers[DOWNLOAD_TOKEN_HEADER]).toBeUndefined();

    // The buyer's own prompt retry (its first answer lost): the file and the same token.
    const retry = await getFrom("127.0.0.1", url, payment);
    expect(retry.status).toBe(200);
    expect(retry.headers[DOWNLOAD_TOKEN_HEADER]).toBe(token);
    expect(retry.bytes).toBe(first.bytes);

    // The token resumes it from anywhere (another link of the buyer's).
    const resumed = await getFrom("127.0.0.2", url, {
      ...payment,
      range: "bytes=0-9",
      [DOWNLOAD_TOKEN_HEADER]: token,
    });
    expect(resumed.status).toBe(206);
    expect(resumed.bytes).toBe(10);
    expect(await balanceOf(payer.address)).toBe(before - 9_000_000n);
  });
});
