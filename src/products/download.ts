import fs from "node:fs";
import { Readable } from "node:stream";
import type { FileBody } from "../contract/operation.ts";
import { DOWNLOAD_TOKEN_HEADER, PAYMENT_RESPONSE_HEADER } from "../payments/headers.ts";
import { Problem } from "../problem.ts";
import type { StoredOutcome } from "../store/store.ts";

/** Response headers a browser-based agent needs to read to resume a download. */
export const DOWNLOAD_RESPONSE_HEADERS = [
  "content-disposition",
  "content-length",
  "content-range",
  "accept-ranges",
  "etag",
  "x-payment-replayed",
  DOWNLOAD_TOKEN_HEADER,
];

export type ByteRange = { start: number; end: number };

/**
 * The one byte range a `Range` header asks for (RFC 9110 §14), inclusive at both ends.
 * undefined: no range, or one this server ignores and answers with the whole file (a malformed
 * header, several ranges, another unit). "unsatisfiable": no byte of the file is in it (416).
 */
export function parseRange(header: string | null, size: number): ByteRange | "unsatisfiable" | undefined {
  if (header === null) return undefined;
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!match) return undefined;
  const [, first = "", last = ""] = match;
  if (first === "" && last === "") return undefined;
  if (first === "") {
    // A suffix: the last N bytes.
    const length = Number(last);
    if (length === 0 || size === 0) return "unsatisfiable";
    return { start: Math.max(0, size - length), end: size - 1 };
  }
  const start = Number(first);
  // "bytes=9-5" is not a range (ignored); a first byte beyond the file is unsatisfiable.
  if (last !== "" && Number(last) < start) return undefined;
  if (start >= size) return "unsatisfiable";
  return { start, end: last === "" ? size - 1 : Math.min(Number(last), size - 1) };
}

const etagOf = (file: FileBody) => `"${file.sha256}"`;

/**
 * Sends a download outcome: the file streamed from disk (never read whole into memory), its
 * digest as a strong ETag, `Accept-Ranges: bytes`; a satisfiable single `Range` (unless an
 * `If-Range` names another validator) gives 206 with `Content-Range`, an unsatisfiable one 416.
 * HEAD gets the same headers without a body. The outcome's own headers (the receipt, the replay
 * mark) are kept.
 */
export async function fileResponse(
  outcome: StoredOutcome & { file: FileBody },
  request: Request,
): Promise<Response> {
  const { file } = outcome;
  const etag = etagOf(file);
  const headers = new Headers(outcome.headers);
  headers.set("accept-ranges", "bytes");
  headers.set("etag", etag);
  headers.set("cache-control", "private, no-store");

  let range = parseRange(request.headers.get("range"), file.size);
  const ifRange = request.headers.get("if-range");
  if (range !== undefined && ifRange !== null && ifRange.trim() !== etag) range = undefined;
  if (range === "unsatisfiable") {
    const problem = Problem.of(
      "range-not-satisfiable",
      `the file has ${file.size} bytes; ask for a range inside it (the payment stays valid for the download)`,
    ).toResponse(new URL(request.url).pathname);
    for (const [name, value] of Object.entries(problem.headers)) headers.set(name, value);
    headers.delete("content-disposition");
    headers.set("content-range", `bytes */${file.size}`);
    headers.set("content-length", String(Buffer.byteLength(problem.body)));
    return new Response(request.method === "HEAD" ? null : problem.body, { status: 416, headers });
  }

  const { start, end } = range ?? { start: 0, end: file.size - 1 };
  const length = file.size === 0 ? 0 : end - start + 1;
  headers.set("content-length", String(length));
  if (range) headers.set("content-range", `bytes ${start}-${end}/${file.size}`);
  const status = range ? 206 : outcome.status;

  if (request.method === "HEAD" || length === 0) return new Response(null, { status, headers });
  // Open before answering, so a release that vanished after settlement is a 503 (the payment can
  // be replayed for the download), not a broken stream.
  let handle: fs.promises.FileHandle;
  try {
    handle = await fs.promises.open(file.path, "r");
    const stat = await handle.stat();
    if (stat.size !== file.size) {
      await handle.close();
      throw new Error(`size ${stat.size}, expected ${file.size}`);
    }
  } catch (error) {
    // The payment may already be settled: the 503 carries its receipt and the download token, without
    // which a retry after the first two minutes could not prove it is the buyer's.
    const kept = Object.fromEntries(
      [PAYMENT_RESPONSE_HEADER, DOWNLOAD_TOKEN_HEADER]
        .map((name) => [name, headerOf(outcome.headers, name)] as const)
        .filter((entry): entry is readonly [string, string] => entry[1] !== undefined),
    );
    throw Problem.of(
      "release-unavailable",
      `the release file cannot be read (${(error as Error).message}); retry the same request with the same payment` +
        ` (and its ${DOWNLOAD_TOKEN_HEADER}) within the hour; it is charged once`,
      { headers: { "retry-after": "30", ...kept } },
    );
  }
  const stream = handle.createReadStream({ start, end, autoClose: true });
  return new Response(Readable.toWeb(stream) as ReadableStream<Uint8Array>, { status, headers });
}

/** A stored header by name, whatever its case. */
function headerOf(headers: Record<string, string>, name: string): string | undefined {
  const wanted = name.toLowerCase();
  for (const [key, value] of Object.entries(headers)) if (key.toLowerCase() === wanted) return value;
  return undefined;
}
