/**
 * Paid download of a large release: time to headers and to the last byte, and the process's peak
 * RSS growth, against reading the same file straight from disk in the same run. The first
 * download includes the digest check (the whole file hashed once); later ones reuse it.
 */
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { devPrivateKey } from "../src/chain/dev-accounts.ts";
import { createPayer } from "../src/client/paying-fetch.ts";
import { products } from "../src/products/index.ts";
import { startTestService } from "../test/helpers/service.ts";
import { type BenchRow, report } from "./lib.ts";

const SIZE_MB = Number(process.env.BENCH_RELEASE_MB ?? 256);
const slug = "csv-json-quality-toolkit";
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "utility402-bench-release-"));
const file = path.join(dir, `${slug}-0.0.0-bench.zip`);
const hash = crypto.createHash("sha256");
const fd = fs.openSync(file, "w");
for (let i = 0; i < SIZE_MB; i++) {
  const chunk = crypto.randomBytes(1 << 20);
  fs.writeSync(fd, chunk);
  hash.update(chunk);
}
fs.closeSync(fd);
const size = SIZE_MB << 20;
fs.writeFileSync(
  path.join(dir, `${slug}.json`),
  JSON.stringify({
    product: slug,
    version: "0.0.0-bench",
    file: path.basename(file),
    size,
    sha256: hash.digest("hex"),
    manifestSha256: "0".repeat(64),
  }),
);

async function measure(
  label: string,
  body: () => Promise<{ headersMs: number; bytes: number }>,
): Promise<BenchRow> {
  const rss0 = process.memoryUsage().rss;
  let peak = rss0;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 10);
  const start = performance.now();
  const { headersMs, bytes } = await body();
  const totalMs = performance.now() - start;
  clearInterval(sampler);
  return {
    case: label,
    bytes,
    "headers ms": Math.round(headersMs),
    "total ms": Math.round(totalMs),
    "MB/s": Math.round(bytes / 1048576 / (totalMs / 1000)),
    "peak RSS growth MB": Math.round((peak - rss0) / 1e6),
  };
}

async function drain(response: Response): Promise<number> {
  let bytes = 0;
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return bytes;
    bytes += value.length;
  }
}

const service = await startTestService({ RELEASES_DIR: dir }, { operations: products });
try {
  const url = `${service.url}/v1/products/${slug}`;
  const payer = createPayer(devPrivateKey(8));
  const rows: BenchRow[] = [];
  rows.push(
    await measure("fs read stream (reference)", async () => {
      let bytes = 0;
      for await (const chunk of fs.createReadStream(file)) bytes += (chunk as Buffer).length;
      return { headersMs: 0, bytes };
    }),
  );
  for (const label of ["paid download, first (digest verified)", "paid download, digest cached"]) {
    rows.push(
      await measure(label, async () => {
        const start = performance.now();
        const response = await payer.fetch(url);
        const headersMs = performance.now() - start;
        return { headersMs, bytes: await drain(response) };
      }),
    );
  }
  const payment = await payer.signPayment(await fetch(url));
  await drain(await fetch(url, { headers: payment }));
  rows.push(
    await measure("resume: same payment, Range second half (replay)", async () => {
      const start = performance.now();
      const response = await fetch(url, { headers: { ...payment, range: `bytes=${size / 2}-` } });
      const headersMs = performance.now() - start;
      return { headersMs, bytes: await drain(response) };
    }),
  );
  report("product-download", rows, { releaseMB: SIZE_MB, cpus: os.cpus().length });
} finally {
  await service.stop();
  fs.rmSync(dir, { recursive: true, force: true });
}
