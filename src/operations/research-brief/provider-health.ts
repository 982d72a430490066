import net from "node:net";
import type { ChatModel } from "./model.ts";
import { ProviderError } from "./retry.ts";
import type { SearchProvider } from "./search-provider.ts";
import type { ResearchSettings } from "./settings.ts";

/** Consecutive failures after which an upstream's circuit opens. */
const FAILURES_TO_OPEN = 3;
/** How long an open circuit refuses new jobs before one is let through to try again. */
const OPEN_MS = 30_000;
/** How long a reachability probe's answer is trusted (an unpaid 402 never probes more often). */
const PROBE_TTL_MS = 30_000;
const PROBE_TIMEOUT_MS = 2_000;

/** An upstream a research job needs: a search provider or the model. */
export interface Upstream {
  name: string;
  /** Where it is reached: probed for reachability (a TCP connection, no request) before a job is taken. */
  url: string;
}

interface Circuit {
  consecutiveFailures: number;
  openUntil: number;
  lastFailure?: { at: number; reason: string };
  lastSuccess?: number;
  probe?: { at: number; reachable: boolean; reason?: string };
  probing?: Promise<void>;
}

export interface UpstreamStatus {
  name: string;
  available: boolean;
  /** Why it is not available (the last failure, or the failed probe). */
  reason?: string;
  lastFailure?: { at: string; reason: string };
  lastSuccess?: string;
}

/** Opens a TCP connection to the URL's host and port and closes it: answers whether anything listens. */
export type ReachabilityProbe = (url: string, timeoutMs: number) => Promise<void>;

export const tcpProbe: ReachabilityProbe = (url, timeoutMs) =>
  new Promise((resolve, reject) => {
    const target = new URL(url);
    const port = Number(target.port || (target.protocol === "https:" ? 443 : 80));
    const socket = net.connect({ host: target.hostname.replace(/^\[|\]$/g, ""), port });
    const timer = setTimeout(
      () => socket.destroy(new Error(`no connection within ${timeoutMs} ms`)),
      timeoutMs,
    );
    socket.once("connect", () => {
      clearTimeout(timer);
      socket.destroy();
      resolve();
    });
    // Every error (also one after the answer, a reset by the peer) is this probe's, never unhandled.
    socket.on("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });

/**
 * What the service knows of the research brief's upstreams, so that a job that cannot succeed is
 * refused with a 503 before any payment (SPEC: "503 research worker unavailable, no payment is taken").
 *
 * Two signals: the jobs' own calls (a circuit breaker: three failures in a row open it for 30 s, then
 * one job is let through), and, before a job is taken, a reachability probe of every upstream (a TCP
 * connection, no request, its answer kept 30 s, so unpaid requests cannot make the service hammer an
 * upstream). A probe sees "nothing listens there" and "the name does not resolve"; an upstream that
 * answers but fails (a 500, a model refusing the request) is caught by the breaker after its jobs fail,
 * and those jobs cost their payers nothing (their payments are held, never settled).
 */
export class ProviderHealth {
  private readonly circuits = new Map<string, Circuit>();
  private readonly now: () => number;
  private readonly probe: ReachabilityProbe;

  constructor(options: { now?: () => number; probe?: ReachabilityProbe } = {}) {
    this.now = options.now ?? Date.now;
    this.probe = options.probe ?? tcpProbe;
  }

  private circuit(name: string): Circuit {
    let circuit = this.circuits.get(name);
    if (!circuit) {
      circuit = { consecutiveFailures: 0, openUntil: 0 };
      this.circuits.set(name, circuit);
    }
    return circuit;
  }

  succeeded(name: string): void {
    const circuit = this.circuit(name);
    circuit.consecutiveFailures = 0;
    circuit.openUntil = 0;
    circuit.lastSuccess = this.now();
  }

  failed(name: string, reason: string): void {
    const circuit = this.circuit(name);
    circuit.consecutiveFailures++;
    circuit.lastFailure = { at: this.now(), reason: reason.split("\n")[0]?.slice(0, 300) ?? reason };
    if (circuit.consecutiveFailures >= FAILURES_TO_OPEN) circuit.openUntil = this.now() + OPEN_MS;
  }

  /** Why this upstream cannot take a job now, probing it when its last probe is stale; undefined if it can. */
  async unavailable(upstream: Upstream): Promise<string | undefined> {
    const circuit = this.circuit(upstream.name);
    if (circuit.openUntil > this.now()) {
      return `${upstream.name} failed ${circuit.consecutiveFailures} times in a row (last: ${circuit.lastFailure?.reason})`;
    }
    if (!circuit.probe || this.now() - circuit.probe.at >= PROBE_TTL_MS) {
      circuit.probing ??= this.probe(upstream.url, PROBE_TIMEOUT_MS)
        .then(
          () => ({ reachable: true }),
          (error: Error) => ({ reachable: false, reason: error.message }),
        )
        .then((result) => {
          circuit.probe = { at: this.now(), ...result };
          circuit.probing = undefined;
        });
      await circuit.probing;
    }
    if (circuit.probe && !circuit.probe.reachable) {
      return `${upstream.name} is unreachable at ${new URL(upstream.url).host} (${circuit.probe.reason})`;
    }
    return undefined;
  }

  /** Each upstream as /readyz and the catalog show it (without probing). */
  status(upstreams: readonly Upstream[]): UpstreamStatus[] {
    const now = this.now();
    return upstreams.map(({ name }) => {
      const circuit = this.circuit(name);
      const open = circuit.openUntil > now;
      const unreachable = circuit.probe && !circuit.probe.reachable && now - circuit.probe.at < PROBE_TTL_MS;
      return {
        name,
        available: !open && !unreachable,
        ...(open
          ? { reason: `circuit open after ${circuit.consecutiveFailures} failures` }
          : unreachable
            ? { reason: `unreachable (${circuit.probe?.reason})` }
            : {}),
        ...(circuit.lastFailure
          ? {
              lastFailure: {
                at: new Date(circuit.lastFailure.at).toISOString(),
                reason: circuit.lastFailure.reason,
              },
            }
          : {}),
        ...(circuit.lastSuccess ? { lastSuccess: new Date(circuit.lastSuccess).toISOString() } : {}),
      };
    });
  }
}

/** The upstreams a research job needs, by name and URL, from the research settings. */
export function researchUpstreams(research: ResearchSettings): { search: Upstream[]; model?: Upstream } {
  const { search, llm } = research;
  const urls: Record<string, string | undefined> = {
    wikipedia: search.wikipediaUrl,
    crossref: search.crossrefUrl,
    ...(search.web ? { [search.web.provider]: search.web.url } : {}),
  };
  return {
    search: search.providers.flatMap((name) => (urls[name] ? [{ name, url: urls[name] as string }] : [])),
    ...(llm ? { model: { name: `model ${llm.model}`, url: llm.baseUrl } } : {}),
  };
}

/** Provider failures feed the breaker; an aborted job (lost lease, shutdown) says nothing about it. */
async function watched<T>(health: ProviderHealth, names: string[], call: () => Promise<T>): Promise<T> {
  try {
    const result = await call();
    for (const name of names) health.succeeded(name);
    return result;
  } catch (error) {
    if (error instanceof ProviderError) for (const name of names) health.failed(name, error.message);
    throw error;
  }
}

/** The search as the pipeline sees it, its outcomes recorded for every search upstream it spans. */
export function watchedSearch(
  search: SearchProvider,
  health: ProviderHealth,
  upstreams: Upstream[],
): SearchProvider {
  const names = upstreams.map((upstream) => upstream.name);
  return {
    name: search.name,
    search: (query, options) => watched(health, names, () => search.search(query, options)),
  };
}

export function watchedModel(model: ChatModel, health: ProviderHealth, upstream: Upstream): ChatModel {
  return {
    name: model.name,
    complete: (messages, options) =>
      watched(health, [upstream.name], () => model.complete(messages, options)),
  };
}
