import { type AnyOperation, defineOperation } from "../../src/contract/operation.ts";

export const FAILURE = "contract suite: the operation's work fails";

const fail = async (): Promise<never> => {
  throw new Error(FAILURE);
};

/**
 * The same operation (id, path, price, input, admission) whose work throws after the payment was
 * verified: a handler's call, a started operation's handle(), or, for an asynchronous operation, the
 * job its accepted call queued (the payment is then held, and must be released, not settled).
 */
export function failingVariant(operation: AnyOperation): AnyOperation {
  if (operation.handler) return defineOperation({ ...operation, handler: fail });
  const start = operation.start;
  if (!start) throw new Error(`${operation.id} has neither a handler nor start: it does no paid work`);
  return defineOperation({
    ...operation,
    async start(env) {
      const started = await start(env);
      return operation.kind === "async" ? { ...started, jobHandler: fail } : { ...started, handle: fail };
    },
  });
}
