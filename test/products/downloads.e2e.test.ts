import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { devPrivateKey } from "../../src/chain/dev-accounts.ts";
import { createPayer, paymentReceipt } from "../../src/client/paying-fetch.ts";
import { DOWNLOAD_TOKEN_HEADER } from "../../src/payments/headers.ts";
import { PRODUCT_REPLAY_WINDOW_MS } from "../../src/payments/resource-server/replay-policy.ts";
import {
  buildProducts,
  CLINICAL_PRODUCT,
  PRODUCT_SLUGS,
  type ProductSlug,
} from "../../src/products/build.ts";
import { products } from "../../src/products/index.ts";
import type { ReleaseDescriptor } from "../../src/products/release.ts";
import { startTestService, type TestService, usdcBalances } from "../helpers/service.ts";
import { checkAgainstManifest, countsOf, createClinicalDb, SNAPSHOT_DATE, sha256 } from "./helpers.ts";

const PRICES: Record<ProductSlug, bigint> = {
  "csv-json-quality-toolkit": 9_000_000n,
  "agent-safe-paid-work-kit": 15_000_000n,
  "automation-data-toolkit-bundle": 24_000_000n,
  "engineering-unit-conversion-api": 19_000_000n,
  "clinical-trials-outcomes-post-2020": 99_000_000n,
};

describe("product downloads on the local chain", () => {
  let service: TestService;
  let balanceOf: ReturnType<typeof usdcBalances>;
  let clockOffset = 0;
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "utility402-downloads-"));
  const releasesDir = path.join(work, "releases");
  const clinicalDb = path.join(work, "clinical.sqlite");
  const descriptors = new Map<ProductSlug, ReleaseDescriptor>();
  let clinicalCounts: ReturnType<typeof countsOf>;
  const payer = createPayer(devPrivateKey(4));
  const url = (slug: ProductSlug) => `${service.url}/v1/products/${slug}`;
  const archivePath = (slug: ProductSlug) => path.join(releasesDir, descriptors.get(slug)?.file as string);

  /** A signed payment for a product, made from its 402 (the client decides when to send it). */
  const signFor = async (slug: ProductSlug) => payer.signPayment(await fetch(url(slug)));

  beforeAll(async () => {
    clinicalCounts = countsOf(await createClinicalDb(clinicalDb));
    for (const outcome of await buildProducts({ releasesDir, clinicalDb })) {
      if (outcome.state === "unbuildable") throw new Error(outcome.reason);
      descriptors.set(outcome.product, outcome.descriptor);
    }
    service = await startTestService(
      { RELEASES_DIR: releasesDir, CLINICAL_TRIALS_DB: clinicalDb },
      { operations: products, clock: () => Date.now() + clockOffset },
    );
    balanceOf = usdcBalances(service.localChain?.rpcUrl as string);
  }, 180_000);
  afterAll(async () => {
    await service?.stop();
    fs.rmSync(work, { recursive: true, force: true });
  });

  it("the catalog shows each product's release: version, size, sha256, available", async () => {
    const catalog = await (await fetch(`${service.url}/catalog.json`)).json();
    for (const slug of PRODUCT_SLUGS) {
      const entry = catalog.products.find((p: { path: string }) => p.path === `/v1/products/${slug}`);
      const descriptor = descriptors.get(slug) as ReleaseDescriptor;
      expect(entry.available, slug).toBe(true);
      expect(entry.release).toMatchObject({
        version: descriptor.version,
        size: descriptor.size,
        sha256: descriptor.sha256,
      });
    }
    const clinical = catalog.products.find((p: { path: string }) => p.path.endsWith(CLINICAL_PRODUCT));
    expect(clinical.release).toMatchObject({ snapshotDate: SNAPSHOT_DATE, counts: clinicalCounts });
  });

  it("the file name the catalog lists is the name the download carries", async () => {
    const catalog = await (await fetch(`${service.url}/catalog.json`)).json();
    for (const slug of ["csv-json-quality-toolkit", "engineering-unit-conversion-api"] as const) {
      const entry = catalog.products.find((p: { path: string }) => p.path === `/v1/products/${slug}`);
      const response = await payer.fetch(url(slug), { method: "HEAD" });
      expect(response.status).toBe(200);
      expect(response.headers.get("content-disposition")).toBe(
        `attachment; filename="${entry.release.file}"`,
      );
    }
  });

  it("an unpaid GET or HEAD gets 402 with the product's price", async () => {
    for (const method of ["GET", "HEAD"]) {
      const response = await fetch(url("csv-json-quality-toolkit"), { method });
      expect(response.status).toBe(402);
      expect(response.headers.get("PAYMENT-REQUIRED")).toBeTruthy();
      expect(response.headers.get("content-disposition")).toBeNull();
    }
    const withRange = await fetch(url("csv-json-quality-toolkit"), { headers: { range: "bytes=0-9" } });
    expect(withRange.status).toBe(402);
    expect((await withRange.json()).accepts[0].amount).toBe("9000000");
  });

  it.each(PRODUCT_SLUGS)(
    "%s: paid once, streamed as a versioned ZIP that matches its MANIFEST",
    async (slug) => {
      const descriptor = descriptors.get(slug) as ReleaseDescriptor;
      const [payerBefore, payToBefore] = [await balanceOf(payer.address), await balanceOf(service.payTo)];
      const response = await payer.fetch(url(slug));
      expect(response.status).toBe(200);
      expect(response.headers.get("content-type")).toBe("application/zip");
      expect(response.headers.get("content-length")).toBe(String(descriptor.size));
      expect(response.headers.get("content-disposition")).toBe(
        `attachment; filename="${slug}-${descriptor.version}.zip"`,
      );
      expect(response.headers.get("etag")).toBe(`"${descriptor.sha256}"`);
      expect(response.headers.get("accept-ranges")).toBe("bytes");
      expect(paymentReceipt(response)).toMatchObject({ success: true, network: "eip155:8453" });
      const bytes = Buffer.from(await response.arrayBuffer());
      expect(sha256(bytes)).toBe(descriptor.sha256);
      const { manifest } = await checkAgainstManifest(bytes, slug);
      expect(manifest.version).toBe(descriptor.version);
      expect(await balanceOf(payer.address)).toBe(payerBefore - PRICES[slug]);
      expect(await balanceOf(service.payTo)).toBe(payToBefore + PRICES[slug]);
    },
  );

  it("a resumed download re-sends the same payment with Range: 206, charged once", async () => {
    const slug = "engineering-unit-conversion-api";
    const descriptor = descriptors.get(slug) as ReleaseDescriptor;
    const whole = fs.readFileSync(archivePath(slug));
    const payment = await signFor(slug);
    const before = await balanceOf(payer.address);

    // The first paid request already asks for a range: it is charged and answered 206.
    const first = await fetch(url(slug), { headers: { ...payment, range: "bytes=0-999" } });
    expect(first.status).toBe(206);
    expect(first.headers.get("content-range")).toBe(`bytes 0-999/${descriptor.size}`);
    expect(first.headers.get("content-length")).toBe("1000");
    expect(Buffer.from(await first.arrayBuffer()).equals(whole.subarray(0, 1000))).toBe(true);
    expect(await balanceOf(payer.address)).toBe(before - PRICES[slug]);

    // The rest, with the same payment: replayed, not charged again (Range is not part of the request hash).
    const rest = await fetch(url(slug), { headers: { ...payment, range: "bytes=1000-" } });
    expect(rest.status).toBe(206);
    expect(rest.headers.get("x-payment-replayed")).toBe("true");
    expect(rest.headers.get("content-range")).toBe(`bytes 1000-${descriptor.size - 1}/${descriptor.size}`);
    expect(Buffer.from(await rest.arrayBuffer()).equals(whole.subarray(1000))).toBe(true);

    const suffix = await fetch(url(slug), { headers: { ...payment, range: "bytes=-10" } });
    expect(suffix.status).toBe(206);
    expect(Buffer.from(await suffix.arrayBuffer()).equals(whole.subarray(-10))).toBe(true);

    const full = await fetch(url(slug), { headers: payment });
    expect(full.status).toBe(200);
    expect(sha256(Buffer.from(await full.arrayBuffer()))).toBe(descriptor.sha256);
    expect(await balanceOf(payer.address)).toBe(before - PRICES[slug]);
  });

  it("HEAD, If-Range, several ranges and an unsatisfiable range behave as download clients expect", async () => {
    const slug = "csv-json-quality-toolkit";
    const descriptor = descriptors.get(slug) as ReleaseDescriptor;
    const payment = await signFor(slug);
    const before = await balanceOf(payer.address);

    const paid = await fetch(url(slug), { headers: payment });
    expect(paid.status).toBe(200);
    await paid.arrayBuffer();

    const head = await fetch(url(slug), { method: "HEAD", headers: payment });
    expect(head.status).toBe(200);
    expect(head.headers.get("content-length")).toBe(String(descriptor.size));
    expect(head.headers.get("etag")).toBe(`"${descriptor.sha256}"`);
    expect(head.headers.get("accept-ranges")).toBe("bytes");
    expect((await head.arrayBuffer()).byteLength).toBe(0);

    const headRange = await fetch(url(slug), { method: "HEAD", headers: { ...payment, range: "bytes=5-9" } });
    expect(headRange.status).toBe(206);
    expect(headRange.headers.get("content-length")).toBe("5");

    // A validator of another release: the whole (current) file, not a piece of it.
    const stale = await fetch(url(slug), {
      headers: { ...payment, range: "bytes=5-9", "if-range": '"0123"' },
    });
    expect(stale.status).toBe(200);
    expect(Number((await stale.arrayBuffer()).byteLength)).toBe(descriptor.size);
    const fresh = await fetch(url(slug), {
      headers: { ...payment, range: "bytes=5-9", "if-range": `"${descriptor.sha256}"` },
    });
    expect(fresh.status).toBe(206);
    await fresh.arrayBuffer();

    const several = await fetch(url(slug), { headers: { ...payment, range: "bytes=0-1,5-9" } });
    expect(several.status).toBe(200);
    await several.arrayBuffer();

    const beyond = await fetch(url(slug), { headers: { ...payment, range: `bytes=${descriptor.size}-` } });
    expect(beyond.status).toBe(416);
    expect(beyond.headers.get("content-range")).toBe(`bytes */${descriptor.size}`);
    expect(beyond.headers.get("content-disposition")).toBeNull();
    expect((await beyond.json()).type).toBe("urn:utility402:problem:range-not-satisfiable");

    expect(await balanceOf(payer.address)).toBe(before - PRICES[slug]);
  });

  it("a paid HEAD settles like the GET it stands for; the GET that follows is the replay", async () => {
    const slug = "agent-safe-paid-work-kit";
    const payment = await signFor(slug);
    const before = await balanceOf(payer.address);
    const head = await fetch(url(slug), { method: "HEAD", headers: payment });
    expect(head.status).toBe(200);
    expect(paymentReceipt(head)).toMatchObject({ success: true });
    const get = await fetch(url(slug), { headers: payment });
    expect(get.status).toBe(200);
    expect(get.headers.get("x-payment-replayed")).toBe("true");
    expect(sha256(Buffer.from(await get.arrayBuffer()))).toBe(descriptors.get(slug)?.sha256);
    expect(await balanceOf(payer.address)).toBe(before - PRICES[slug]);
  });

  it("a product payment is replayed for two minutes, then for an hour only with its download token, then 409", async () => {
    const slug = "csv-json-quality-toolkit";
    const payment = await signFor(slug);
    const first = await fetch(url(slug), { headers: payment });
    expect(first.status).toBe(200);
    await first.arrayBuffer();
    const token = first.headers.get(DOWNLOAD_TOKEN_HEADER) as string;
    expect(token).toMatch(/^[A-Za-z0-9_-]{32}$/);
    // Within two minutes the payment alone resumes (the client's own prompt retry of a lost answer).
    clockOffset = 60_000;
    expect((await fetch(url(slug), { headers: { ...payment, range: "bytes=0-0" } })).status).toBe(206);
    // Later the payment alone is not enough: it is public on chain once settled.
    clockOffset = 30 * 60_000;
    const withoutToken = await fetch(url(slug), { headers: { ...payment, range: "bytes=0-0" } });
    expect(withoutToken.status).toBe(409);
    expect((await withoutToken.json()).detail).toContain(DOWNLOAD_TOKEN_HEADER);
    const wrongToken = await fetch(url(slug), {
      headers: {
        ...payment,
        range: "bytes=0-0",
        [DOWNLOAD_TOKEN_HEADER]: token.replace(/^./, (c) => (c === "A" ? "B" : "A")),
      },
    });
    expect(wrongToken.status).toBe(409);
    const later = await fetch(url(slug), {
      headers: { ...payment, range: "bytes=0-0", [DOWNLOAD_TOKEN_HEADER]: token },
    });
    expect(later.status).toBe(206);
    expect(later.headers.get(DOWNLOAD_TOKEN_HEADER)).toBe(token);
    clockOffset = PRODUCT_REPLAY_WINDOW_MS + 60_000;
    const tooLate = await fetch(url(slug), { headers: { ...payment, [DOWNLOAD_TOKEN_HEADER]: token } });
    expect(tooLate.status).toBe(409);
    expect((await tooLate.json()).type).toBe("urn:utility402:problem:payment-already-used");
    clockOffset = 0;
  });

  it("a paid download whose file vanished after settlement answers 503 with its receipt and download token", async () => {
    const slug = "agent-safe-paid-work-kit";
    const payment = await signFor(slug);
    const first = await fetch(url(slug), { headers: payment });
    expect(first.status).toBe(200);
    await first.arrayBuffer();
    const token = first.headers.get(DOWNLOAD_TOKEN_HEADER) as string;
    const file = archivePath(slug);
    fs.renameSync(file, `${file}.aside`);
    try {
      const retry = await fetch(url(slug), { headers: { ...payment, range: "bytes=0-9" } });
      expect(retry.status).toBe(503);
      expect(retry.headers.get("retry-after")).toBe("30");
      // Without these the buyer could not resume after the first two minutes.
      expect(retry.headers.get(DOWNLOAD_TOKEN_HEADER)).toBe(token);
      expect(paymentReceipt(retry)).toMatchObject({ success: true });
    } finally {
      fs.renameSync(`${file}.aside`, file);
    }
    clockOffset = 30 * 60_000;
    const resumed = await fetch(url(slug), {
      headers: { ...payment, range: "bytes=0-9", [DOWNLOAD_TOKEN_HEADER]: token },
    });
    expect(resumed.status).toBe(206);
    clockOffset = 0;
  });

  it("a failed download's payment is replayed for the usual two minutes only", async () => {
    const slug = "automation-data-toolkit-bundle";
    const file = archivePath(slug);
    // Signed while the release is there (once it is gone, the 402 to sign is not even sent); the
    // release then goes missing between the 402 and the paid request.
    const payment = await signFor(slug);
    fs.renameSync(file, `${file}.aside`);
    try {
      expect((await fetch(url(slug), { headers: payment })).status).toBe(503);
    } finally {
      fs.renameSync(`${file}.aside`, file);
    }
    expect((await fetch(url(slug), { headers: payment })).status).toBe(503);
    clockOffset = 3 * 60_000;
    expect((await fetch(url(slug), { headers: payment })).status).toBe(409);
    clockOffset = 0;
  });

  it("a missing release gives 503 with Retry-After and charges nothing", async () => {
    const slug = "automation-data-toolkit-bundle";
    const file = archivePath(slug);
    const aside = `${file}.aside`;
    fs.renameSync(file, aside);
    try {
      const [payerBefore, payToBefore] = [await balanceOf(payer.address), await balanceOf(service.payTo)];
      const response = await payer.fetch(url(slug));
      expect(response.status).toBe(503);
      expect(response.headers.get("retry-after")).toBeTruthy();
      const problem = await response.json();
      expect(problem.type).toBe("urn:utility402:problem:release-unavailable");
      expect(problem.detail).toContain("no payment was taken");
      expect(paymentReceipt(response)).toBeUndefined();
      expect(await balanceOf(payer.address)).toBe(payerBefore);
      expect(await balanceOf(service.payTo)).toBe(payToBefore);
    } finally {
      fs.renameSync(aside, file);
    }
    expect((await payer.fetch(url(slug))).status).toBe(200);
  });

  it("a corrupted release (same size, other bytes) gives 503 and charges nothing", async () => {
    const slug = "engineering-unit-conversion-api";
    const file = archivePath(slug);
    const original = fs.readFileSync(file);
    const corrupted = Buffer.from(original);
    const middle = Math.floor(corrupted.length / 2);
    corrupted[middle] = (corrupted[middle] as number) ^ 0xff;
    fs.writeFileSync(file, corrupted);
    try {
      const before = await balanceOf(payer.address);
      const response = await payer.fetch(url(slug));
      expect(response.status).toBe(503);
      expect((await response.json()).detail).toContain("does not match its recorded sha256");
      expect(await balanceOf(payer.address)).toBe(before);
    } finally {
      fs.writeFileSync(file, original);
    }
    const restored = await payer.fetch(url(slug));
    expect(restored.status).toBe(200);
    expect(sha256(Buffer.from(await restored.arrayBuffer()))).toBe(descriptors.get(slug)?.sha256);
  });
});

describe("the clinical product without a full ingest", () => {
  let service: TestService;
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "utility402-no-clinical-"));
  const payer = createPayer(devPrivateKey(5));

  beforeAll(async () => {
    const clinicalDb = path.join(work, "sample.sqlite");
    await createClinicalDb(clinicalDb, "sample");
    const releasesDir = path.join(work, "releases");
    const outcomes = await buildProducts({ releasesDir, clinicalDb }, [CLINICAL_PRODUCT]);
    expect(outcomes[0]?.state).toBe("unbuildable");
    service = await startTestService(
      { RELEASES_DIR: releasesDir, CLINICAL_TRIALS_DB: clinicalDb },
      { operations: products },
    );
  }, 120_000);
  afterAll(async () => {
    await service?.stop();
    fs.rmSync(work, { recursive: true, force: true });
  });

  it("an unavailable product answers 503 with Retry-After before any 402: nothing to sign", async () => {
    for (const method of ["GET", "HEAD"]) {
      const response = await fetch(`${service.url}/v1/products/${CLINICAL_PRODUCT}`, { method });
      expect(response.status, method).toBe(503);
      expect(response.headers.get("retry-after")).toBeTruthy();
      expect(response.headers.get("PAYMENT-REQUIRED")).toBeNull();
      if (method === "GET") {
        const problem = await response.json();
        expect(problem.type).toBe("urn:utility402:problem:release-unavailable");
        expect(problem.detail).toContain("no payment was taken");
      }
    }
  });

  it("the discovery documents mark it unavailable", async () => {
    const manifest = await (await fetch(`${service.url}/.well-known/x402`)).json();
    const resource = manifest.items.find((r: { resource: string }) => r.resource.endsWith(CLINICAL_PRODUCT));
    expect(resource).toMatchObject({ available: false, unavailable: "no release has been built" });
  });

  it("the catalog says unavailable; a paid request is 503 and charges nothing", async () => {
    const catalog = await (await fetch(`${service.url}/catalog.json`)).json();
    const clinical = catalog.products.find((p: { path: string }) => p.path.endsWith(CLINICAL_PRODUCT));
    expect(clinical).toMatchObject({
      available: false,
      release: null,
      unavailable: "no release has been built",
    });
    const balanceOf = usdcBalances(service.localChain?.rpcUrl as string);
    const before = await balanceOf(payer.address);
    const response = await payer.fetch(`${service.url}/v1/products/${CLINICAL_PRODUCT}`);
    expect(response.status).toBe(503);
    expect(response.headers.get("retry-after")).toBeTruthy();
    expect(await balanceOf(payer.address)).toBe(before);
  });
});
