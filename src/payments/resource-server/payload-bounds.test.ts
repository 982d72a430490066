import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { hostilePayloads, runSeed } from "../../../test/hardening/hostile-payment-payloads.ts";
import { decoded, standInPayment, standInRequirements } from "../../../test/helpers/gate-stand-ins.ts";
import { asPaymentPayload } from "./paid-request.ts";
import { MAX_PAYMENT_DEPTH, MAX_PAYMENT_VALUES, paymentBoundsProblem } from "./payload-bounds.ts";

const payment = decoded(standInPayment(7));

describe("the bounds of a payment payload", () => {
  it("a payment one level or one value beyond them is refused, at the bound exactly it is not", () => {
    const nested = (depth: number) => JSON.parse(`${"[".repeat(depth)}${"]".repeat(depth)}`);
    // The payload is level 1 and its extensions level 2: a value there may be nested MAX - 2 more levels.
    const within = { ...payment, extensions: { deep: nested(MAX_PAYMENT_DEPTH - 2) } };
    const beyond = { ...payment, extensions: { deep: nested(MAX_PAYMENT_DEPTH - 1) } };
    expect(paymentBoundsProblem(within)).toBeUndefined();
    expect(paymentBoundsProblem(beyond)).toMatch(/nested more than 32 levels/);
    const values = (count: number) => ({ ...payment, extensions: { wide: Array(count).fill(0) } });
    const own = JSON.stringify(payment).match(/[:[,]/g)?.length ?? 0;
    expect(paymentBoundsProblem(values(MAX_PAYMENT_VALUES - own - 10))).toBeUndefined();
    expect(paymentBoundsProblem(values(MAX_PAYMENT_VALUES))).toMatch(/more than 5000 values/);
  });

  it("generated: a deep, wide or prototype-keyed value anywhere in a payment is refused unread", () => {
    const seed = runSeed();
    console.log(`payload-bounds property seed ${seed} (FC_SEED=${seed} repeats it)`);
    fc.assert(
      fc.property(hostilePayloads(JSON.parse(JSON.stringify(payment)), 250_000), ({ text }) => {
        const decoded = asPaymentPayload(JSON.parse(text), "the payment");
        expect(decoded).toMatchObject({ unreadable: expect.stringMatching(/^the payment is /) });
      }),
      { seed, numRuns: 400 },
    );
  });

  it("its cost is bounded by the values it looks at, not by what it is given", () => {
    const huge = {
      ...payment,
      extensions: Object.fromEntries(Array.from({ length: 200_000 }, (_, i) => [i, 0])),
    };
    expect(paymentBoundsProblem(huge)).toMatch(/more than 5000 values/);
    expect(paymentBoundsProblem({ ...payment, accepted: standInRequirements })).toBeUndefined();
  });
});
