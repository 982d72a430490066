import type { Logger } from "pino";

/**
 * A look run every `intervalMs`, and at once when woken; never two at a time (a wake during a look is
 * followed by one more). What the payment sweepers (held payments, orphaned payments) run on.
 */
export class SweepLoop {
  private timer: NodeJS.Timeout | undefined;
  private sweeping: Promise<void> | undefined;
  private again = false;
  private stopped = false;

  constructor(
    private readonly look: () => Promise<void>,
    private readonly intervalMs: number,
    private readonly log: Logger,
    private readonly what: string,
  ) {}

  get isStopped(): boolean {
    return this.stopped;
  }

  start(): void {
    this.timer = setInterval(() => this.wake(), this.intervalMs);
    this.timer.unref();
    this.wake();
  }

  /** Stops looking; resolves once a look in progress has ended. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.sweeping;
  }

  /** Looks now; a look already running is followed by one more. */
  wake(): void {
    if (this.stopped) return;
    if (this.sweeping) {
      this.again = true;
      return;
    }
    this.sweeping = (async () => {
      do {
        this.again = false;
        await this.look().catch((error) => this.log.warn({ err: error }, `${this.what} failed`));
      } while (this.again && !this.stopped);
      this.sweeping = undefined;
    })();
  }
}
