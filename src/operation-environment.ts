import type { Logger } from "pino";
import type { LocalChain } from "./chain/local-chain.ts";
import type { Config } from "./config.ts";
import type { OperationDefinition } from "./contract/operation.ts";
import type { Store } from "./store/store.ts";

/**
 * What a running service hands an operation that needs more than its input (upstream URLs, clients, the
 * store): the `Env` of the contract's `start`. It names the service's own singletons, so it stands here,
 * above config, and not in the contract, which every operation folder imports.
 */
export interface OperationEnvironment {
  config: Config;
  log: Logger;
  /** The service clock (injectable in tests). */
  now: () => Date;
  store: Store;
  /** Present in local mode: the test chain the service started. */
  localChain?: LocalChain;
}

/** An operation this service can start: its `start`, if any, takes the service's environment. */
// biome-ignore lint/suspicious/noExplicitAny: the registry holds operations of every input/output type.
export type ServiceOperation = OperationDefinition<any, any, OperationEnvironment>;
