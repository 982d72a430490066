import { abortable, type Limit, limitConcurrency } from "../retry.ts";
import { providerFetch } from "./retry.ts";

/**
 * Requests to a host one at a time, in the order asked: Wikimedia's API etiquette asks clients to
 * make requests in series, not in parallel, and Crossref's polite pool limits concurrent requests.
 * One queue per host (host:port) for everything a service process asks through it; different
 * hosts run side by side.
 */
export class HostQueue {
  /** Each host's limit of one call, kept while some call for the host is running or waiting. */
  private readonly hosts = new Map<string, { limit: Limit; calls: number }>();

  run<T>(url: string, task: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    const host = new URL(url).host;
    let entry = this.hosts.get(host);
    if (!entry) {
      entry = { limit: limitConcurrency(1), calls: 0 };
      this.hosts.set(host, entry);
    }
    const held = entry;
    held.calls++;
    const result = held.limit(task, signal).finally(() => {
      if (--held.calls === 0 && this.hosts.get(host) === held) this.hosts.delete(host);
    });
    // A caller that gives up stops waiting at once: a waiter leaves the queue, a running call's answer is dropped.
    return abortable(result, signal);
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
