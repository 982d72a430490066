/** Closes one thing a start-up step opened; `graceMs` is how long it may let work in flight finish. */
export type Closer = (graceMs: number) => unknown;

/**
 * What a service has opened, closed in the reverse order: each start-up step pushes its closer as
 * it succeeds, so stopping the service and a start-up that fails halfway close exactly what was
 * opened, the last opened first.
 */
export class ShutdownStack {
  private readonly closers: { name: string; close: Closer }[] = [];
  private closing: Promise<void> | undefined;

  /** `onError` hears of each closer that fails; the closers after it still run. */
  constructor(private readonly onError: (name: string, error: unknown) => void = () => {}) {}

  push(name: string, close: Closer): void {
    if (this.closing) throw new Error(`cannot open ${name}: the service is closing`);
    this.closers.push({ name, close });
  }

  /**
   * Runs every closer once, the last pushed first, each after the one before it has finished. A
   * closer that fails does not stop the others; the answer then fails with its error (the first one's
   * when several fail). Calling it again answers the same promise.
   */
  close(graceMs: number): Promise<void> {
    this.closing ??= this.closeAll(graceMs);
    return this.closing;
  }

  private async closeAll(graceMs: number): Promise<void> {
    const failures: unknown[] = [];
    for (const { name, close } of [...this.closers].reverse()) {
      try {
        await close(graceMs);
      } catch (error) {
        failures.push(error);
        this.onError(name, error);
      }
    }
    if (failures.length > 0) throw failures[0];
  }
}
