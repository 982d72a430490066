import { z } from "zod";
import { envSettings, httpUrl, optional } from "../../env-settings.ts";

/** The TED Search API: where, and how it is called (cache, calls in flight, timeout, backoff). */
export interface TedSettings {
  apiUrl: string;
  /** 0 = no cache, single flight only. */
  cacheTtlMs: number;
  maxInFlight: number;
  timeoutMs: number;
  retryBaseMs: number;
}

export const tedSettings = envSettings({
  variables: {
    TED_API_URL: optional(httpUrl).default("https://api.ted.europa.eu/v3/notices/search"),
    TED_CACHE_TTL_MS: optional(z.coerce.number().int().min(0).max(86_400_000)).default(600_000),
    TED_MAX_IN_FLIGHT: optional(z.coerce.number().int().min(1).max(64)).default(4),
    TED_TIMEOUT_MS: optional(z.coerce.number().int().min(100).max(120_000)).default(10_000),
    TED_RETRY_BASE_MS: optional(z.coerce.number().int().min(0).max(60_000)).default(500),
  },
  read: (e): TedSettings => ({
    apiUrl: e.TED_API_URL,
    cacheTtlMs: e.TED_CACHE_TTL_MS,
    maxInFlight: e.TED_MAX_IN_FLIGHT,
    timeoutMs: e.TED_TIMEOUT_MS,
    retryBaseMs: e.TED_RETRY_BASE_MS,
  }),
});
