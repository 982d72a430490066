/**
 * The settler's recent gas estimates, one per contract function (contract address and selector).
 *
 * eth_estimateGas runs a call many times over (a search for the lowest gas limit that succeeds):
 * on anvil 3.0 ms of CPU for a transferWithAuthorization, against 0.5 ms for one eth_call of it. A
 * function estimated in the last `maxAgeMs` is therefore only simulated: one eth_call with the gas
 * limit its settlement would get (`gasLimitFor` of the estimate), and the estimate is taken when that
 * call succeeds. A call that fails there is estimated after all (settler-signer.ts): the refusal, or
 * the new estimate of a call that needs more gas than the known one allows, such as a payment from
 * an ERC-1271 wallet whose signature check costs more than an EOA's (without the gas limit on the
 * simulation, that settlement ran out of gas on chain: test/settler-gas-estimates.e2e.test.ts).
 */
export class GasEstimates {
  private readonly known = new Map<string, { gas: bigint; at: number }>();

  constructor(
    private readonly maxAgeMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** The estimate for this function, while it is fresh. */
  get(key: string): bigint | undefined {
    const entry = this.known.get(key);
    if (!entry) return undefined;
    if (this.now() - entry.at < this.maxAgeMs) return entry.gas;
    this.known.delete(key);
    return undefined;
  }

  record(key: string, gas: bigint): void {
    this.known.set(key, { gas, at: this.now() });
  }
}
