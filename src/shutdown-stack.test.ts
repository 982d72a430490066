import { describe, expect, it } from "vitest";
import { ShutdownStack } from "./shutdown-stack.ts";

describe("ShutdownStack", () => {
  it("closes the last opened first, each after the one before it has finished", async () => {
    const closed: string[] = [];
    const stack = new ShutdownStack();
    stack.push("store", () => closed.push("store"));
    stack.push("chain", async () => {
      await new Promise((resolve) => setTimeout(resolve, 5));
      closed.push("chain");
    });
    stack.push("server", () => closed.push("server"));
    await stack.close(0);
    expect(closed).toEqual(["server", "chain", "store"]);
  });

  it("gives every closer the grace it is closed with", async () => {
    const graces: number[] = [];
    const stack = new ShutdownStack();
    stack.push("worker", (graceMs) => graces.push(graceMs));
    stack.push("server", (graceMs) => graces.push(graceMs));
    await stack.close(15_000);
    expect(graces).toEqual([15_000, 15_000]);
  });

  it("a closer that throws does not skip the others; the close fails with its error, reported by name", async () => {
    const closed: string[] = [];
    const reported: [string, unknown][] = [];
    const stack = new ShutdownStack((name, error) => reported.push([name, error]));
    const journalError = new Error("journal write failed");
    stack.push("store", () => closed.push("store"));
    stack.push("journal", async () => {
      throw journalError;
    });
    stack.push("operations", () => {
      throw new Error("pool already gone");
    });
    stack.push("server", () => closed.push("server"));
    await expect(stack.close(0)).rejects.toThrow("pool already gone");
    expect(closed).toEqual(["server", "store"]);
    expect(reported.map(([name]) => name)).toEqual(["operations", "journal"]);
    expect(reported[1]?.[1]).toBe(journalError);
  });

  it("closes once: a second close answers the first one's promise and closes nothing again", async () => {
    let closes = 0;
    const stack = new ShutdownStack();
    stack.push("store", () => {
      closes++;
    });
    const first = stack.close(100);
    const second = stack.close(0);
    expect(second).toBe(first);
    await Promise.all([first, second]);
    await stack.close(0);
    expect(closes).toBe(1);
  });

  it("with nothing opened, closes at once", async () => {
    await expect(new ShutdownStack().close(0)).resolves.toBeUndefined();
  });

  it("refuses a closer pushed once closing has begun (it would never run)", async () => {
    const stack = new ShutdownStack();
    await stack.close(0);
    expect(() => stack.push("late", () => {})).toThrow("cannot open late: the service is closing");
  });
});
