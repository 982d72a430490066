import { providerFetch } from "./retry.ts";

/**
 * Requests to a host one at a time, in the order asked: Wikimedia's API etiquette asks clients to
 * make requests in series, not in parallel, and Crossref's polite pool limits concurrent requests.
 * One queue per host (host:port) for everything a service process asks through it; different
 * hosts run side by side.
 */
export class HostQueue {
  private readonly tails = new Map<string, Promise<void>>();

  run<T>(url: string, task: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    const host = new URL(url).host;
    const previous = this.tails.get(host) ?? Promise.resolve();
    const result = previous.then(() => {
      signal?.throwIfAborted();
      return task();
    });
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(host, tail);
    void tail.then(() => {
      if (this.tails.get(host) === tail) this.tails.delete(host);
    });
    if (!signal) return result;
    // A caller that gives up stops waiting at once; its turn, when it comes, is skipped.
    return Promise.race([
      result,
      new Promise<never>((_, reject) => {
        if (signal.aborted) reject(signal.reason);
        else signal.addEventListener("abort", () => reject(signal.reason), { once: true });
      }),
    ]);
  }
}

export interface PoliteFetcher {
  /** GETs a JSON API through the host's queue with the service's User-Agent. */
  getJson(
    provider: string,
    url: string,
    options: { timeoutMs: number; signal?: AbortSignal },
  ): Promise<unknown>;
}

export function createPoliteFetcher(userAgent: string, queue = new HostQueue()): PoliteFetcher {
  return {
    getJson(provider, url, { timeoutMs, signal }) {
      return queue.run(
        url,
        () =>
          providerFetch(provider, url, {
            headers: { accept: "application/json", "user-agent": userAgent },
            timeoutMs,
            signal,
          }),
        signal,
      );
    },
  };
}
