import { BaseError, HttpRequestError, SocketClosedError, TimeoutError } from "viem";

/**
 * The reference facilitator turns an unreachable RPC into a verdict on the payment
 * ("invalid_exact_evm_signature" at verification). Each facilitator call therefore runs on a view
 * of the settler's signer that records the first transport failure of its chain calls, so that
 * call can answer "chain unavailable" (503, retry; the outcome is resolved later) instead of
 * blaming the payer (402). The record is passed explicitly: an AsyncLocalStorage scope would, on
 * Node 20, switch on promise hooks for every promise of the process from the first paid call on.
 */
export interface TransportFailures {
  first?: Error;
}

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

/** `signer` with each of its calls recording its first transport failure in `failures`. */
export function recordingTransportFailures<S extends object>(signer: S, failures: TransportFailures): S {
  const note = (error: unknown): never => {
    if (!failures.first && isTransportError(error)) failures.first = error as Error;
    throw error;
  };
  return new Proxy(signer, {
    get(target, property) {
      const value = Reflect.get(target, property);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        try {
          const result = value.apply(target, args);
          return typeof result?.then === "function" ? Promise.resolve(result).catch(note) : result;
        } catch (error) {
          return note(error);
        }
      };
    },
  });
}

/**
 * Runs a facilitator call on a view of `signer` that records transport failures; a call that did
 * not succeed after one of its chain calls failed on transport throws ChainUnavailableError.
 */
export async function failingOnTransportErrors<
  S extends object,
  T extends { isValid?: boolean; success?: boolean },
>(signer: S, call: (recording: S) => Promise<T>): Promise<T> {
  const failures: TransportFailures = {};
  const result = await call(recordingTransportFailures(signer, failures));
  const succeeded = result.isValid === true || result.success === true;
  if (!succeeded && failures.first) throw new ChainUnavailableError(failures.first);
  return result;
}
