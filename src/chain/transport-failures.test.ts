import { HttpRequestError } from "viem";
import { describe, expect, it } from "vitest";
import {
  ChainUnavailableError,
  failingOnTransportErrors,
  recordingTransportFailures,
} from "./transport-failures.ts";

const unreachable = () => new HttpRequestError({ url: "http://127.0.0.1:9/", details: "fetch failed" });

const signer = {
  address: "0xabc",
  calls: 0,
  async blockNumber() {
    this.calls++;
    return 7n;
  },
  async readContract(kind: "transport" | "revert") {
    throw kind === "transport" ? unreachable() : new Error("execution reverted");
  },
  getAddresses() {
    return [this.address];
  },
};

describe("transport failures of a facilitator call", () => {
  it("are recorded by the call's own view of the signer, which otherwise behaves as the signer", async () => {
    const failures: { first?: Error } = {};
    const recording = recordingTransportFailures(signer, failures);
    expect(recording.address).toBe("0xabc");
    expect(recording.getAddresses()).toEqual(["0xabc"]);
    expect(await recording.blockNumber()).toBe(7n);
    expect(signer.calls).toBe(1);
    await expect(recording.readContract("revert")).rejects.toThrow("execution reverted");
    expect(failures.first).toBeUndefined();
    await expect(recording.readContract("transport")).rejects.toBeInstanceOf(HttpRequestError);
    expect(failures.first).toBeInstanceOf(HttpRequestError);
  });

  it("turn a call that did not succeed into ChainUnavailableError, and leave other calls and verdicts alone", async () => {
    const refusedAfterOutage = failingOnTransportErrors(signer, async (view) => {
      await view.readContract("transport").catch(() => undefined); // the reference swallows it into a verdict
      return { isValid: false, invalidReason: "invalid_exact_evm_signature" };
    });
    await expect(refusedAfterOutage).rejects.toBeInstanceOf(ChainUnavailableError);

    const refused = await failingOnTransportErrors(signer, async (view) => {
      await view.readContract("revert").catch(() => undefined);
      return { isValid: false, invalidReason: "invalid_exact_evm_signature" };
    });
    expect(refused.invalidReason).toBe("invalid_exact_evm_signature");

    const succeededDespiteOutage = await failingOnTransportErrors(signer, async (view) => {
      await view.readContract("transport").catch(() => undefined);
      return { success: true };
    });
    expect(succeededDespiteOutage.success).toBe(true);

    // Concurrent calls keep their own records.
    const [outage, clean] = await Promise.allSettled([
      failingOnTransportErrors(signer, async (view) => {
        await view.readContract("transport").catch(() => undefined);
        return { success: false };
      }),
      failingOnTransportErrors(signer, async (view) => {
        await view.blockNumber();
        return { success: false };
      }),
    ]);
    expect(outage.status).toBe("rejected");
    expect(clean).toEqual({ status: "fulfilled", value: { success: false } });
  });
});
