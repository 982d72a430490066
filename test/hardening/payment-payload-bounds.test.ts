import { PAYMENT_IDENTIFIER } from "@x402/extensions/payment-identifier";
import { describe, expect, it } from "vitest";
import { OPERATIONS } from "../../src/catalog/registry.ts";
import { toolDiscovery } from "../../src/mcp/tool-terms.ts";
import { bazaarDeclaration } from "../../src/payments/resource-server/bazaar-declaration.ts";
import { paymentBoundsProblem } from "../../src/payments/resource-server/payload-bounds.ts";
import { decoded, standInPayment } from "../helpers/gate-stand-ins.ts";

/** The payload bounds (src/payments/resource-server/payload-bounds.ts) leave room for every real payment. */
describe("the bounds of a payment payload and the registry", () => {
  const payment = decoded(standInPayment(7));

  it("every operation's payment, echoing the complete Bazaar extension of either door, is within them", () => {
    for (const operation of OPERATIONS) {
      for (const extension of [bazaarDeclaration(operation), toolDiscovery(operation, "complete")]) {
        const echoed = {
          ...payment,
          resource: { url: `https://example.com${operation.path}`, description: operation.summary },
          extensions: {
            ...extension,
            [PAYMENT_IDENTIFIER]: { info: { required: false, id: "pay_0123456789abcdef" } },
          },
        };
        expect(paymentBoundsProblem(JSON.parse(JSON.stringify(echoed))), operation.id).toBeUndefined();
      }
    }
  });
});
