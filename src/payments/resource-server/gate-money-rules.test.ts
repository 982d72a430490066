import { afterEach, describe, expect, it } from "vitest";
import { lastNonce, paymentHeader, standInGate, TX } from "../../../test/helpers/gate-fixture.ts";
import {
  decoded,
  httpOutcome,
  standInPaymentKey,
  standInRequirements,
  standInTerms,
} from "../../../test/helpers/gate-stand-ins.ts";
import type { SqliteStore } from "../../store/sqlite/sqlite-store.ts";

const requirements = standInRequirements;
const terms = standInTerms;
const stores: SqliteStore[] = [];
afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
});
const setup = (options: Parameters<typeof standInGate>[0]) => standInGate(options, stores);

describe("the money rules the end-to-end payment suites check, at the gate", () => {
  /** A facilitator that settles everything, noting each settlement sent. */
  const settles = (sent: string[] = []) => ({
    sent,
    settle: async () =>
      sent.push("settle") && { success: true, transaction: TX, network: requirements.network },
  });

  it("no payment: the route's terms, nothing run", async () => {
    const { gate, call } = setup(settles());
    expect(await gate.handle({ ...call(paymentHeader()), payment: undefined })).toEqual({
      kind: "payment-required",
      terms,
    });
  });

  it("an operation that fails after verification is not charged: released, never settled", async () => {
    const { sent, settle } = settles();
    const { gate, call, store } = setup({ settle });
    const header = paymentHeader();
    const outcome = await httpOutcome(gate, {
      ...call(header),
      run: async () => {
        throw new Error("boom");
      },
    });
    expect(outcome.status).toBe(500);
    expect(sent).toEqual([]);
    expect((await store.getPayment(standInPaymentKey(lastNonce())))?.state).toBe("released");
  });

  it("a success is settled once; its prompt retry is replayed, not settled again; after two minutes it is refused", async () => {
    const { sent, settle } = settles();
    let now = Date.now();
    const { gate, call } = setup({ settle, now: () => now });
    const header = paymentHeader();
    const first = await httpOutcome(gate, call(header));
    expect(first.status).toBe(200);
    expect(first.headers["PAYMENT-RESPONSE"]).toBeDefined();
    const retry = await httpOutcome(gate, call(header));
    expect(retry.headers["x-payment-replayed"]).toBe("true");
    expect(retry.body).toBe(first.body);
    expect(sent).toEqual(["settle"]);
    now += 121_000;
    const late = await httpOutcome(gate, call(header));
    expect(late.status).toBe(409);
    expect(sent).toEqual(["settle"]);
  });

  it("a payment is for its request only: another input is a 409; another signature over its nonce a 402", async () => {
    const { sent, settle } = settles();
    const { gate, call } = setup({ settle });
    const header = paymentHeader();
    expect((await httpOutcome(gate, call(header))).status).toBe(200);
    const other = await httpOutcome(gate, { ...call(header), input: { rows: [{ id: "2" }] } });
    expect(other.status).toBe(409);
    expect(JSON.parse(other.body).type).toMatch(/payment-already-used$/);
    const resigned = decoded(header);
    (resigned.payload as { signature: string }).signature = `0x${"22".repeat(65)}`;
    const forged = await httpOutcome(gate, { ...call(header), payment: resigned });
    expect(forged.status).toBe(402);
    expect(JSON.parse(forged.body).reason).toBe("nonce_already_used");
    expect(sent).toEqual(["settle"]);
  });
});
