import type { Payer } from "../../src/client/paying-fetch.ts";
import { jsonPost } from "./service.ts";

/**
 * A flood: `count` payments signed by `payer` for one request to `url` (each its own nonce, signed
 * before any is sent), sent at once. The answers, each with the payment it carried.
 */
export async function fireAtOnce(url: string, request: unknown, payer: Payer, count: number) {
  const terms = await fetch(url, jsonPost(request));
  const payments: Record<string, string>[] = [];
  for (let i = 0; i < count; i++) payments.push(await payer.signPayment(terms.clone()));
  const responses = await Promise.all(payments.map((payment) => fetch(url, jsonPost(request, payment))));
  return Promise.all(
    responses.map(async (response, i) => ({
      status: response.status,
      contentType: response.headers.get("content-type"),
      body: await response.json(),
      payment: payments[i] as Record<string, string>,
    })),
  );
}

/** Polls a job's status URL until it succeeded or failed (at most 2 minutes); its last view. */
export async function pollUntilFinished(statusUrl: string, pollMs = 100) {
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    const body = await (await fetch(statusUrl)).json();
    if (body.status === "succeeded" || body.status === "failed") return body;
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
  throw new Error(`${statusUrl} did not finish`);
}
