import { afterEach, describe, expect, it } from "vitest";
import { lastNonce, paymentHeader, standInGate, TX } from "../../../test/helpers/gate-fixture.ts";
import {
  decoded,
  httpOutcome,
  standInPaymentKey,
  standInRequirements,
} from "../../../test/helpers/gate-stand-ins.ts";
import type { SqliteStore } from "../../store/sqlite/sqlite-store.ts";
import { paymentIdentifierOf } from "./payment-identifier-extension.ts";

const stores: SqliteStore[] = [];
afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
});

const ID = "pay_0123456789abcdef0123";
const withId = (header: string, info: unknown) => ({
  ...decoded(header),
  extensions: { "payment-identifier": { info } },
});

describe("paymentIdentifierOf", () => {
  it("reads the id of the extension, none without it, and refuses a malformed one", () => {
    const header = paymentHeader();
    expect(paymentIdentifierOf(decoded(header))).toEqual({});
    expect(paymentIdentifierOf(withId(header, { required: false, id: ID }))).toEqual({ id: ID });
    expect(paymentIdentifierOf(withId(header, { required: false }))).toEqual({});
    for (const info of [
      { required: false, id: "short" },
      { required: false, id: "has spaces in it, 16+" },
      {},
    ]) {
      expect(paymentIdentifierOf(withId(header, info)), JSON.stringify(info)).toEqual({
        unreadable: expect.stringContaining("payment-identifier"),
      });
    }
  });

  it("never compiles the JSON Schema a client echoes (it checks the id against the declared format)", () => {
    const payment = {
      ...decoded(paymentHeader()),
      extensions: {
        "payment-identifier": {
          info: { required: false, id: ID },
          schema: { type: "object", properties: { id: { type: "string", pattern: "^(a+)+$" } } },
        },
      },
    };
    expect(paymentIdentifierOf(payment)).toEqual({ id: ID });
  });
});

describe("a payment-identifier at the gate", () => {
  const settles = (sent: string[] = []) => ({
    sent,
    settle: async () =>
      sent.push("settle") && { success: true, transaction: TX, network: standInRequirements.network },
  });

  it("a second payment under the id, same request: the first one's answer, settled once, the second never recorded", async () => {
    const { sent, settle } = settles();
    const { gate, call, store } = standInGate({ settle }, stores);
    const first = await httpOutcome(gate, { ...call(paymentHeader()), paymentIdentifier: ID });
    expect(first.status).toBe(200);
    const second = await httpOutcome(gate, { ...call(paymentHeader()), paymentIdentifier: ID });
    expect(second.headers["x-payment-replayed"]).toBe("true");
    expect(second.body).toBe(first.body);
    expect(sent).toEqual(["settle"]);
    expect(await store.getPayment(standInPaymentKey(lastNonce()))).toBeUndefined();
    // Without the id, another payment is another purchase.
    expect((await httpOutcome(gate, call(paymentHeader()))).headers["x-payment-replayed"]).toBeUndefined();
    expect(sent).toEqual(["settle", "settle"]);
  });

  it("the id on another request is a 409, nothing settled", async () => {
    const { sent, settle } = settles();
    const { gate, call } = standInGate({ settle }, stores);
    expect((await httpOutcome(gate, { ...call(paymentHeader()), paymentIdentifier: ID })).status).toBe(200);
    const other = await httpOutcome(gate, {
      ...call(paymentHeader()),
      input: { rows: [{ id: "2" }] },
      paymentIdentifier: ID,
    });
    expect(other.status).toBe(409);
    expect(JSON.parse(other.body).detail).toContain("payment-identifier");
    expect(sent).toEqual(["settle"]);
  });
});
