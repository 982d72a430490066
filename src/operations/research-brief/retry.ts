import { retry } from "../retry.ts";

/**
 * A provider call that failed; `retryable` when a retry may fix it (network, timeout, 429, 5xx).
 * An HTTP error answer also carries its status and body (parsed JSON when it was JSON), so a caller
 * can act on what a 400 says (e.g. a model that refuses a parameter).
 */
export class ProviderError extends Error {
  constructor(
    readonly provider: string,
    message: string,
    readonly retryable: boolean,
    readonly answer?: { status: number; body: unknown },
  ) {
    super(`${provider}: ${message}`);
  }
}

export interface RetryPolicy {
  attempts: number;
  /** The first wait; each further wait doubles it. */
  baseDelayMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { attempts: 3, baseDelayMs: 1000 };

/**
 * Calls `work` until it succeeds, a non-retryable ProviderError, or the attempts run out (then throws the last
 * error); waits baseDelayMs, then twice that, … between. An aborted signal ends a wait at once (its reason is thrown).
 */
export function withRetries<T>(
  work: () => Promise<T>,
  policy: RetryPolicy,
  signal?: AbortSignal,
): Promise<T> {
  return retry(work, {
    attempts: policy.attempts,
    baseMs: policy.baseDelayMs,
    retryOn: (error) => (error instanceof ProviderError ? error.retryable : true),
    signal,
  });
}

/** fetch with a timeout, turning transport failures and retryable statuses into ProviderErrors. */
export async function providerFetch(
  provider: string,
  url: string,
  init: RequestInit & { timeoutMs: number; signal?: AbortSignal },
): Promise<unknown> {
  const timeout = AbortSignal.timeout(init.timeoutMs);
  let response: Response;
  try {
    response = await fetch(url, {
      ...init,
      signal: init.signal ? AbortSignal.any([init.signal, timeout]) : timeout,
    });
  } catch (error) {
    const reason = timeout.aborted ? `no answer within ${init.timeoutMs} ms` : (error as Error).message;
    throw new ProviderError(provider, `unreachable (${reason})`, true);
  }
  if (!response.ok) {
    const text = await response.text().catch(() => "");
    const detail = text.slice(0, 200);
    const retryable = response.status === 429 || response.status >= 500;
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {}
    throw new ProviderError(
      provider,
      `answered ${response.status}${detail ? `: ${detail}` : ""}`,
      retryable,
      {
        status: response.status,
        body,
      },
    );
  }
  try {
    return await response.json();
  } catch {
    throw new ProviderError(provider, "answered something that is not JSON", true);
  }
}
