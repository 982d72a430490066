import { AsyncLocalStorage } from "node:async_hooks";
import { BaseError, HttpRequestError, SocketClosedError, TimeoutError } from "viem";

/**
 * The reference facilitator turns an unreachable RPC into a verdict on the payment
 * ("invalid_exact_evm_signature" at verification). The
 * settler's chain calls record such failures in the scope of the facilitator call that made
 * them, so that call can answer "chain unavailable" (503, retry; the outcome is resolved later)
 * instead of blaming the payer (402).
 */
const scopes = new AsyncLocalStorage<{ failure?: Error }>();

export class ChainUnavailableError extends Error {
  constructor(cause: Error) {
    super(`the chain RPC could not be reached: ${cause.message.split("\n")[0]}`, { cause });
  }
}

export function isTransportError(error: unknown): boolean {
  if (error instanceof BaseError) {
    return Boolean(
      error.walk(
        (e) => e instanceof HttpRequestError || e instanceof TimeoutError || e instanceof SocketClosedError,
      ),
    );
  }
  return error instanceof TypeError && /fetch failed/i.test(error.message);
}

/** Wraps a chain call: a transport failure is recorded in the current scope, then rethrown. */
export async function recordingTransportFailures<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    const scope = scopes.getStore();
    if (scope && !scope.failure && isTransportError(error)) scope.failure = error as Error;
    throw error;
  }
}

/** Runs a facilitator call; if it did not succeed and a chain call failed on transport, throws ChainUnavailableError. */
export async function failingOnTransportErrors<T extends { isValid?: boolean; success?: boolean }>(
  call: () => Promise<T>,
): Promise<T> {
  const scope: { failure?: Error } = {};
  const result = await scopes.run(scope, call);
  const succeeded = result.isValid === true || result.success === true;
  if (!succeeded && scope.failure) throw new ChainUnavailableError(scope.failure);
  return result;
}
