import type { Logger } from "pino";
import { atomicToUsd } from "../../contract/price.ts";
import type { JobState } from "../../jobs/queue.ts";
import type { PayerAccount, Store, UnfinishedPayment } from "../../store/store.ts";
import type { AuthorizationChecker } from "../settler/authorization-state.ts";
import type { TokenBalances, TokenTransfers } from "../settler/token-balances.ts";
import { SweepLoop } from "./sweep-loop.ts";

/** How often the chain is looked at without an admission asking (Base makes a block every 2 s). */
const WATCH_INTERVAL_MS = 1000;
/** Beyond this many blocks unseen (a restart, a long stall), every payer is checked instead of the logs read. */
const MAX_LOG_RANGE = 2000n;
/**
 * How long a payer whose balance an admission read stays watched from that block: the admission reserves
 * after the read, so a look in between does not find the payer among those with unfinished payments, and
 * its transfer in that gap would otherwise never be read.
 */
const ADMISSION_WATCH_MS = 60_000;
/** Payers checked side by side (one balanceOf and one ledger read each). */
const CHECK_CONCURRENCY = 4;
/** A job not yet run, or running: released (failed unrun, or stopped) when its payment is no longer covered. */
const RELEASABLE: ReadonlySet<JobState | null> = new Set(["awaiting_payment", "queued", "running"]);

export interface PayerCoverOptions {
  store: Store;
  chain: TokenTransfers;
  /** The network of the payments watched (CAIP-2). */
  network: string;
  /** A ready job's settlement may have landed before the ledger says so: asked before counting it. */
  authorizations?: AuthorizationChecker;
  log: Logger;
  /** Told when jobs were released, so their payments are let go at once (the held-payment settler). */
  onReleased?: () => void;
  /** The clock of ADMISSION_WATCH_MS. */
  now?: () => number;
}

/**
 * Keeps every payer's accepted held jobs within its balance as USDC leaves it (issue 33: two wallets passing
 * the same 5 USDC between them each got a job accepted). It reads the token's Transfer logs from the payers
 * that have unfinished payments, block range by block range; a payer that sent some is checked again
 * (balanceOf at the block read up to), and its jobs that its balance no longer covers are released, newest
 * first: failed with `payment_unpayable` before any worker runs them (a running one is stopped), and their
 * payments released by the settler, nothing charged.
 *
 * It is also the balance each held admission reads (TokenBalances): the logs are read up to the latest block
 * first, and the balance at that block, so the money a payer received from another payer is never admitted
 * while the sender's job on it still counts. Several admissions at once share one read of the logs.
 */
export class PayerCover implements TokenBalances {
  private readonly loop: SweepLoop;
  /** The last block whose transfers were looked at; undefined: none yet (every payer is checked first). */
  private checkedThrough: bigint | undefined;
  private checking: Promise<void> | undefined;
  /** Payers still short after a check (their excess could not be released yet): checked again each look. */
  private readonly short = new Map<string, PayerAccount>();
  /** Payers whose balance was read for an admission: the earliest block read, watched until `until`. */
  private readonly admitting = new Map<string, { account: PayerAccount; readAt: bigint; until: number }>();

  constructor(private readonly options: PayerCoverOptions) {
    this.loop = new SweepLoop(() => this.look(), WATCH_INTERVAL_MS, options.log, "payer cover watch");
  }

  start(): void {
    this.loop.start();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  /** The holder's balance at the latest block, once every transfer up to that block has been acted on. */
  async balanceOf(asset: `0x${string}`, holder: `0x${string}`): Promise<bigint> {
    const block = await this.catchUp();
    const key = `${holder}:${asset}`.toLowerCase();
    // Pruned here too: a stalled chain (no new block, no look) must not let admissions grow the map.
    this.stillAdmitting();
    const earlier = this.admitting.get(key);
    this.admitting.set(key, {
      account: { payer: holder.toLowerCase(), network: this.options.network, asset },
      readAt: earlier && earlier.readAt < block ? earlier.readAt : block,
      until: this.now() + ADMISSION_WATCH_MS,
    });
    return this.options.chain.balanceOf(asset, holder, block);
  }

  /** Acts on every transfer up to the latest block; returns that block. */
  async catchUp(): Promise<bigint> {
    const latest = await this.options.chain.latestBlock();
    // The chain went back (a reorg, evm_revert): the blocks read past `latest` are gone, and their numbers
    // will carry other transfers, which no log range from `checkedThrough` would ever read; check everyone.
    if (this.checkedThrough !== undefined && latest < this.checkedThrough) this.checkedThrough = undefined;
    while (this.checkedThrough === undefined || this.checkedThrough < latest) {
      if (!this.checking) {
        this.checking = this.checkThrough(latest).finally(() => {
          this.checking = undefined;
        });
      }
      await this.checking;
    }
    return latest;
  }

  /** The payers being admitted still watched, the others forgotten. */
  private stillAdmitting() {
    const now = this.now();
    for (const [key, entry] of this.admitting) if (entry.until < now) this.admitting.delete(key);
    return [...this.admitting.values()];
  }

  private now(): number {
    return (this.options.now ?? Date.now)();
  }

  private async look(): Promise<void> {
    const block = await this.catchUp();
    await this.checkAll([...this.short.values()], block);
  }

  private async checkThrough(latest: bigint): Promise<void> {
    const { store, network, log } = this.options;
    const base = this.checkedThrough;
    const from = base === undefined ? undefined : base + 1n;
    const accounts = await store.payersWithUnfinishedPayments(network);
    const admitting = this.stillAdmitting();
    const watched = [...accounts, ...admitting.map((entry) => entry.account)];
    // Payers being admitted are read from the block their balance was read at, at every look while watched.
    let admittedFrom = latest + 1n;
    for (const { readAt } of admitting) if (readAt < admittedFrom) admittedFrom = readAt + 1n;
    let suspects = watched;
    if (from !== undefined && latest - admittedFrom < MAX_LOG_RANGE && latest - from < MAX_LOG_RANGE) {
      // A node may refuse the logs (a result cap a payer's flood of transfers exceeds, a range it does not
      // serve): every payer is checked instead, or every held admission would fail until the range grew past
      // MAX_LOG_RANGE.
      const senders = async () => [
        ...(await this.sendersOf(accounts, from, latest)),
        ...(admittedFrom <= latest
          ? await this.sendersOf(
              admitting.map((entry) => entry.account),
              admittedFrom,
              latest,
            )
          : []),
      ];
      suspects = await senders().catch((error: unknown) => {
        log.warn({ err: error, from, latest }, "transfer logs refused: every payer is checked instead");
        return watched;
      });
    }
    await this.checkAll(suspects, latest);
    // Not past a chain that went back while this check ran: the next one starts over.
    if (this.checkedThrough === base && (base === undefined || base < latest)) this.checkedThrough = latest;
  }

  /** Of `accounts`, those that sent their asset in blocks from..latest, with the payers still short. */
  private async sendersOf(
    accounts: readonly PayerAccount[],
    from: bigint,
    latest: bigint,
  ): Promise<PayerAccount[]> {
    const byAsset = new Map<string, PayerAccount[]>();
    for (const account of accounts)
      byAsset.set(account.asset, [...(byAsset.get(account.asset) ?? []), account]);
    const suspects = [...this.short.values()];
    for (const [asset, ofAsset] of byAsset) {
      const senders = await this.options.chain.sendersAmong(
        asset as `0x${string}`,
        ofAsset.map((account) => account.payer as `0x${string}`),
        from,
        latest,
      );
      suspects.push(...ofAsset.filter((account) => senders.has(account.payer.toLowerCase())));
    }
    return suspects;
  }

  private async checkAll(accounts: readonly PayerAccount[], block: bigint): Promise<void> {
    const queue = [...new Map(accounts.map((a) => [`${a.payer}:${a.asset}`.toLowerCase(), a])).values()];
    let released = 0;
    const lane = async () => {
      for (let account = queue.shift(); account; account = queue.shift())
        released += await this.check(account, block);
    };
    await Promise.all(Array.from({ length: CHECK_CONCURRENCY }, lane));
    if (released > 0) this.options.onReleased?.();
  }

  /**
   * One payer at `block`: what cannot be released counts first (payments being admitted, ready jobs whose
   * settlement may be under way), then its releasable jobs oldest first while the balance covers them; the
   * rest are released. Returns how many jobs were released.
   */
  private async check(account: PayerAccount, block: bigint): Promise<number> {
    const { store, chain, log } = this.options;
    const key = `${account.payer}:${account.asset}`.toLowerCase();
    const [payments, balance] = await Promise.all([
      store.unfinishedPaymentsOf(account),
      chain.balanceOf(account.asset as `0x${string}`, account.payer as `0x${string}`, block),
    ]);
    let owed = 0n;
    for (const payment of payments) {
      if (RELEASABLE.has(payment.jobState)) continue;
      const stillOwed = await this.stillOwed(account, payment);
      // Unknown (the token could not be asked): a settlement that landed would count twice, with the
      // balance it lowered, and release a job its payer covers; the payer is checked again at the next look.
      if (stillOwed === undefined) {
        this.short.set(key, account);
        return 0;
      }
      if (stillOwed) owed += BigInt(payment.amount);
    }
    let released = 0;
    for (const payment of payments.filter((p) => RELEASABLE.has(p.jobState))) {
      const amount = BigInt(payment.amount);
      if (owed + amount <= balance) {
        owed += amount;
        continue;
      }
      const running = payment.jobState === "running";
      const stopped = await store.jobs.expire(payment.jobId as string, {
        code: "payment_unpayable",
        message: `the payer's balance (${atomicToUsd(balance)} USDC) no longer covers this job's payment with its others: the job was ${running ? "stopped" : "released before it ran"} and nothing was charged; the payment will never be settled`,
      });
      if (stopped) {
        released++;
        log.info(
          { paymentKey: payment.paymentKey, job: payment.jobId, block },
          "held job released: payer no longer covers it",
        );
      } else owed += amount;
    }
    if (owed > balance) this.short.set(key, account);
    else this.short.delete(key);
    return released;
  }

  /**
   * A payment that cannot be released counts, unless it is a ready job's whose authorization was used
   * already; undefined when the token could not say.
   */
  private async stillOwed(account: PayerAccount, payment: UnfinishedPayment): Promise<boolean | undefined> {
    if (payment.jobState === "failed") return false;
    if (payment.jobState !== "ready" || !this.options.authorizations) return true;
    const onChain = await this.options.authorizations
      .check({
        asset: account.asset as `0x${string}`,
        payer: account.payer as `0x${string}`,
        nonce: payment.nonce as `0x${string}`,
        payTo: payment.payTo as `0x${string}`,
        amount: BigInt(payment.amount),
      })
      .catch(() => undefined);
    return onChain && onChain.state === "unused";
  }
}
