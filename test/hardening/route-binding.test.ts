import os from "node:os";
import { x402ResourceServer } from "@x402/core/server";
import type { PaymentPayload } from "@x402/core/types";
import { ExactEvmScheme } from "@x402/evm/exact/server";
import { describe, expect, it } from "vitest";
import { OPERATIONS } from "../../src/catalog/registry.ts";
import { loadConfig } from "../../src/config.ts";
import type { AnyOperation } from "../../src/contract/operation.ts";
import { atomicPrice } from "../../src/contract/price.ts";
import { toolTerms } from "../../src/mcp/tool-terms.ts";
import { identifyPayment } from "../../src/payments/resource-server/payment-identity.ts";
import { buildRouteTerms, type PaymentTerms } from "../../src/payments/resource-server/terms.ts";

/*
 * Issue 33, item 4, as a class: for every two routes sold at the same price, a payment quoted for one is
 * refused by the other (resource_mismatch naming the first) in every form a client or a holder of it may
 * present it — with its resource, without it, without its extensions, signed by the x402 v2 client or the
 * v1 one (whose authorization's validity span signs the quote) — at either door, and accepted by its own.
 */

const BASE_URL = "https://utility402.example.com";
const PAYER = "0x2222222222222222222222222222222222222222";
const NOW = 1_800_000_000;

async function routeAndToolTerms() {
  const config = loadConfig({ DATA_DIR: os.tmpdir(), LOG_LEVEL: "silent" });
  const server = new x402ResourceServer().register(config.payment.network, new ExactEvmScheme());
  const settings = { ...config.payment, payTo: "0x1111111111111111111111111111111111111111" as const };
  const routes = await buildRouteTerms(OPERATIONS, settings, BASE_URL, server);
  const doors = (operation: AnyOperation) => {
    const route = routes.get(operation.id) as PaymentTerms;
    return { http: route, mcp: toolTerms(operation, route) };
  };
  return { server, doors };
}

/** The authorization's validity as each official client signs it for terms of this maxTimeoutSeconds. */
const signedBy = {
  "v2 client": (seconds: number) => ({ validAfter: "0", validBefore: String(NOW + seconds) }),
  "v1 client": (seconds: number) => ({ validAfter: String(NOW - 600), validBefore: String(NOW + seconds) }),
  "v1 client, a second ticking between its two clock reads": (seconds: number) => ({
    validAfter: String(NOW - 600),
    validBefore: String(NOW + seconds + 1),
  }),
};

function paymentFor(
  terms: PaymentTerms,
  validity: { validAfter: string; validBefore: string },
): PaymentPayload {
  const { requirements, paymentRequired } = terms;
  return {
    x402Version: 2,
    resource: paymentRequired.resource,
    accepted: requirements,
    extensions: paymentRequired.extensions,
    payload: {
      signature: `0x${"11".repeat(65)}`,
      authorization: {
        from: PAYER,
        to: requirements.payTo,
        value: requirements.amount,
        ...validity,
        nonce: `0x${"ab".repeat(32)}`,
      },
    },
  } as PaymentPayload;
}

/** The forms a holder may present a payment in: as signed, without resource, without resource and extensions. */
const forms = (payment: PaymentPayload): [string, PaymentPayload][] => {
  const { resource: _, ...bare } = payment;
  const { extensions: __, ...bareOfAll } = bare;
  return [
    ["as quoted", payment],
    ["without resource", bare as PaymentPayload],
    ["without resource and extensions", bareOfAll as PaymentPayload],
  ];
};

describe("a payment is bound to the route it was quoted for", async () => {
  const { server, doors } = await routeAndToolTerms();
  const identify = (terms: PaymentTerms, operation: AnyOperation, payment: PaymentPayload) =>
    identifyPayment({ operation, terms, input: {} }, payment, (payload) =>
      server.findMatchingRequirements([terms.requirements], payload),
    );
  const pairs = OPERATIONS.flatMap((quoted) =>
    OPERATIONS.filter(
      (other) => other.path !== quoted.path && atomicPrice(other) === atomicPrice(quoted),
    ).map((presented) => [quoted, presented] as const),
  );

  it("routes at the same price have quotes that differ (by 2 s of maxTimeoutSeconds at least)", () => {
    expect(pairs.length).toBeGreaterThanOrEqual(8);
    for (const [quoted, presented] of pairs) {
      const gap = Math.abs(
        doors(quoted).http.requirements.maxTimeoutSeconds -
          doors(presented).http.requirements.maxTimeoutSeconds,
      );
      expect(gap, `${quoted.id} / ${presented.id}`).toBeGreaterThanOrEqual(2);
    }
  });

  it("refused at every other route at its price, through either door, in every form; accepted by its own", () => {
    let checked = 0;
    for (const [quoted, presented] of pairs) {
      for (const [client, validity] of Object.entries(signedBy)) {
        for (const quotedAt of ["http", "mcp"] as const) {
          const quote = doors(quoted)[quotedAt];
          for (const [form, payment] of forms(
            paymentFor(quote, validity(quote.requirements.maxTimeoutSeconds)),
          )) {
            const what = `${quoted.id} quoted via ${quotedAt}, ${form}, ${client}`;
            for (const door of ["http", "mcp"] as const) {
              expect(
                identify(doors(presented)[door], presented, payment),
                `${what}, at ${presented.id} via ${door}`,
              ).toEqual({
                reason: "resource_mismatch",
                message: expect.stringContaining(
                  `signed for ${form === "as quoted" ? quote.paymentRequired.resource.url.replace(BASE_URL, "") : quoted.path}, not ${presented.path}`,
                ),
              });
              expect(
                identify(doors(quoted)[door], quoted, payment),
                `${what}, at its own route via ${door}`,
              ).toHaveProperty("paymentKey");
              checked += 2;
            }
          }
        }
      }
    }
    expect(checked).toBe(pairs.length * 3 * 2 * 3 * 4);
  });

  it("x402 v1 (X-PAYMENT names no route): the v1 client's signed validity does; a v2 client's authorization in it names none", () => {
    for (const [quoted, presented] of pairs) {
      const quote = doors(quoted).http;
      const at = doors(presented).http;
      // What the v1 door hands the gate: the presented route's own terms around the signed authorization.
      const asV1 = (validity: { validAfter: string; validBefore: string }) => ({
        ...paymentFor(at, validity),
      });
      for (const client of [
        "v1 client",
        "v1 client, a second ticking between its two clock reads",
      ] as const) {
        expect(identify(at, presented, asV1(signedBy[client](quote.requirements.maxTimeoutSeconds)))).toEqual(
          {
            reason: "resource_mismatch",
            message: expect.stringContaining(`signed for ${quoted.path}`),
          },
        );
      }
      // validAfter 0 (the v2 client's authorization, sent as v1): nothing signed names a quote. The limit
      // docs/payments.md states; such a payment pays any route at its price through X-PAYMENT.
      expect(
        identify(at, presented, asV1(signedBy["v2 client"](quote.requirements.maxTimeoutSeconds))),
      ).toHaveProperty("paymentKey");
    }
  });
});
