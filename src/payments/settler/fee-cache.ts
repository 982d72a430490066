import { hexToBigInt, type PublicClient } from "viem";

/** Fees are read at most this often (in block-time units of the polling interval), shared by all settlements. */
const FEE_READS_PER_POLL = 4;

export type Fees = { maxFeePerGas: bigint; maxPriorityFeePerGas: bigint } | { gasPrice: bigint };

/** The chain's fees, read at most every few polling intervals and shared by all settlements. */
export class FeeCache {
  private fees: { value: Promise<Fees>; readAt: number } | undefined;

  constructor(
    private readonly client: Pick<PublicClient, "getBlock" | "getGasPrice" | "request">,
    private readonly pollingIntervalMs: number,
  ) {}

  /** Fees to sign with: the cached read while it is fresh. */
  current(): Promise<Fees> {
    const now = Date.now();
    if (!this.fees || now - this.fees.readAt > this.pollingIntervalMs * FEE_READS_PER_POLL) {
      const value = this.read();
      this.fees = { value, readAt: now };
      value.catch(() => {
        if (this.fees?.value === value) this.fees = undefined;
      });
    }
    return this.fees.value;
  }

  /** The node refused a fee: read them again next time. */
  forget(): void {
    this.fees = undefined;
  }

  private async read(): Promise<Fees> {
    const [block, tip] = await Promise.all([
      this.client.getBlock({ blockTag: "latest" }),
      this.client
        .request({ method: "eth_maxPriorityFeePerGas" })
        .then((value) => hexToBigInt(value))
        .catch(() => undefined),
    ]);
    if (block.baseFeePerGas == null) return { gasPrice: await this.client.getGasPrice() };
    const maxPriorityFeePerGas = tip ?? 1_000_000n;
    // Twice the base fee survives several blocks of rising fees while the cached value is used.
    return { maxFeePerGas: 2n * block.baseFeePerGas + maxPriorityFeePerGas, maxPriorityFeePerGas };
  }
}
