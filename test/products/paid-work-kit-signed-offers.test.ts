import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { PaymentRequired } from "@x402/core/types";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { type EIP712SignedOffer, type OfferPayload, signOfferEIP712 } from "@x402/extensions/offer-receipt";
import { wrapFetchWithPayment, x402Client, x402HTTPClient } from "@x402/fetch";
import fc from "fast-check";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  foldLedger,
  guardClient,
  type Payment,
  readLedger,
  recordReceipts,
  type SpendPolicy,
} from "../../products/agent-safe-paid-work-kit/lib/index.mjs";
import { devAccount, devPrivateKey } from "../../src/chain/dev-accounts.ts";
import { BASE_USDC_ADDRESS } from "../../src/config.ts";
import { jsonDiff } from "../../src/operations/json-diff/index.ts";
import { startHostileSeller } from "../helpers/hostile-x402-seller.ts";
import { jsonPost, startTestService, type TestService, usdcBalances } from "../helpers/service.ts";

/**
 * The paid-work kit's guard and signed offers (x402 offer-receipt): against this service (whose offers
 * verify, so it pays), and against a hostile seller on the same local chain sending forged,
 * mismatched, expired, wrong-signer and missing offers: each refused before any signature leaves,
 * nothing spent on chain. Then generated mutations of a valid offer, through the guarded client.
 */

const PAYER_KEY = devPrivateKey(3);
const payer = privateKeyToAccount(PAYER_KEY);
const SELLER_KEY = privateKeyToAccount(devPrivateKey(7)); // the hostile seller's offer key
const OTHER_KEY = privateKeyToAccount(devPrivateKey(8)); // someone else's key
const PAYEE = devAccount(6).address;
const PRICE = "30000";

let service: TestService;
let rpcUrl: string;
let serviceSigner: `0x${string}`;
const dirs: string[] = [];
const closers: (() => Promise<void>)[] = [];

beforeAll(async () => {
  service = await startTestService({}, { operations: [jsonDiff] });
  rpcUrl = service.localChain?.rpcUrl as string;
  const did = await (await fetch(`${service.url}/.well-known/did.json`)).json();
  serviceSigner = did.verificationMethod[0].blockchainAccountId.split(":")[2];
}, 180_000);
afterAll(async () => {
  for (const close of closers) await close();
  await service?.stop();
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
});

function ledgerFile() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "utility402-offers-guard-"));
  dirs.push(dir);
  return path.join(dir, "ledger.jsonl");
}
const policy = (extra: Partial<SpendPolicy> = {}): SpendPolicy => ({
  version: 1,
  networks: ["eip155:8453"],
  assets: [BASE_USDC_ADDRESS],
  maxPerPayment: "1000000",
  maxPerDay: "5000000",
  rpc: { "eip155:8453": rpcUrl },
  ...extra,
});
/** A guarded x402HTTPClient (so the guard knows the URL requested), paying with the payer's key. */
function guardedPayer(spend: SpendPolicy) {
  const ledgerPath = ledgerFile();
  const decisions: { payment: Payment; decision: { decision: string; reasons: string[] } }[] = [];
  const core = registerExactEvmScheme(new x402Client(), { signer: payer });
  const client = guardClient(new x402HTTPClient(core), {
    policy: spend,
    ledgerPath,
    onDecision: (event: (typeof decisions)[number]) => decisions.push(event),
  });
  return { pay: wrapFetchWithPayment(recordReceipts(fetch, client), client), ledgerPath, decisions, core };
}
const balance = (address: `0x${string}`) => usdcBalances(rpcUrl)(address);

type Entry = { scheme: string; network: string; asset: string; payTo: string; amount: string };
/** An EIP-712 offer signed with the official signer, for `payload` exactly. */
async function signedOffer(
  payload: OfferPayload,
  key = SELLER_KEY,
  acceptIndex = 0,
): Promise<EIP712SignedOffer> {
  const signature = await signOfferEIP712(payload, (p) => key.signTypedData(p as never));
  return { format: "eip712", acceptIndex, payload, signature };
}
const honestPayload = (resourceUrl: string, entry: Entry): OfferPayload => ({
  version: 1,
  resourceUrl,
  scheme: entry.scheme,
  network: entry.network,
  asset: entry.asset,
  payTo: entry.payTo,
  amount: entry.amount,
  validUntil: Math.floor(Date.now() / 1000) + 300,
});
const offerExtension = (offers: unknown[]) => ({ "offer-receipt": { info: { offers } } });

describe("the guard pays this service, whose offers verify", () => {
  it("signedOffers require + the signer from its did.json: paid, settled, the signer in the ledger", async () => {
    const origin = new URL(service.url).origin;
    const { pay, ledgerPath } = guardedPayer(
      policy({ signedOffers: "require", trustedOfferSigners: { [origin]: [serviceSigner] } }),
    );
    const before = await balance(payer.address);
    const response = await pay(`${service.url}/v1/json-diff`, jsonPost(jsonDiff.example.input));
    expect(response.status).toBe(200);
    const [record] = foldLedger(readLedger(ledgerPath));
    expect(record).toMatchObject({
      state: "settled",
      offerSigner: serviceSigner,
      amount: expect.any(String),
    });
    expect(await balance(payer.address)).toBe(before - BigInt(record?.amount as string));
  });

  it("the default policy (verify, no trusted signer listed): paid, the offer's signer recorded", async () => {
    const { pay, ledgerPath } = guardedPayer(policy());
    expect((await pay(`${service.url}/v1/json-diff`, jsonPost(jsonDiff.example.input))).status).toBe(200);
    expect(foldLedger(readLedger(ledgerPath))).toMatchObject([
      { state: "settled", offerSigner: serviceSigner },
    ]);
  });

  it("the same service, but the policy trusts another signer for its origin: refused, nothing spent", async () => {
    const origin = new URL(service.url).origin;
    const { pay, ledgerPath, decisions } = guardedPayer(
      policy({ trustedOfferSigners: { [origin]: [OTHER_KEY.address] } }),
    );
    const before = await balance(payer.address);
    await expect(pay(`${service.url}/v1/json-diff`, jsonPost(jsonDiff.example.input))).rejects.toThrow(
      /not in trustedOfferSigners/,
    );
    expect(decisions.at(-1)?.decision.decision).toBe("deny");
    expect(readLedger(ledgerPath)).toEqual([]);
    expect(await balance(payer.address)).toBe(before);
  });
});

describe("a hostile seller's offers: refused before any signature, nothing spent on chain", () => {
  type Case = {
    name: string;
    spend: Partial<SpendPolicy>;
    offers?: (resourceUrl: string, entry: Entry) => Promise<unknown[]>;
    refusal: RegExp;
  };
  const trusting = (url: string): Partial<SpendPolicy> => ({
    trustedOfferSigners: { [new URL(url).origin]: [SELLER_KEY.address] },
  });
  const cases: ((url: string) => Case)[] = [
    (url) => ({
      name: "forged: the payload changed after signing (cheaper amount claimed)",
      spend: trusting(url),
      offers: async (resourceUrl, entry) => {
        const offer = await signedOffer(honestPayload(resourceUrl, entry));
        return [{ ...offer, payload: { ...offer.payload, validUntil: offer.payload.validUntil + 3600 } }];
      },
      refusal: /not in trustedOfferSigners/,
    }),
    () => ({
      name: "forged: a signature that is not one",
      spend: {},
      offers: async (resourceUrl, entry) => [
        { ...(await signedOffer(honestPayload(resourceUrl, entry))), signature: "0xdeadbeef" },
      ],
      refusal: /does not verify/,
    }),
    () => ({
      name: "mismatched: a genuine offer for a lower amount than the entry asks",
      spend: {},
      offers: async (resourceUrl, entry) => [
        await signedOffer({ ...honestPayload(resourceUrl, entry), amount: "1" }),
      ],
      refusal: /not for the entry to be paid: amount "1" ≠ "30000"/,
    }),
    () => ({
      name: "mismatched: a genuine offer to another payee",
      spend: {},
      offers: async (resourceUrl, entry) => [
        await signedOffer({ ...honestPayload(resourceUrl, entry), payTo: OTHER_KEY.address }),
      ],
      refusal: /payTo/,
    }),
    () => ({
      name: "mismatched: a genuine offer for another resource",
      spend: {},
      offers: async (resourceUrl, entry) => [
        await signedOffer({ ...honestPayload(resourceUrl, entry), resourceUrl: `${resourceUrl}/other` }),
      ],
      refusal: /resourceUrl/,
    }),
    () => ({
      name: "expired",
      spend: {},
      offers: async (resourceUrl, entry) => [
        await signedOffer({
          ...honestPayload(resourceUrl, entry),
          validUntil: Math.floor(Date.now() / 1000) - 1,
        }),
      ],
      refusal: /expired/,
    }),
    (url) => ({
      name: "wrong signer: a valid offer signed by a key the policy does not trust for this origin",
      spend: trusting(url),
      offers: async (resourceUrl, entry) => [await signedOffer(honestPayload(resourceUrl, entry), OTHER_KEY)],
      refusal: /not in trustedOfferSigners/,
    }),
    () => ({
      name: 'missing, under signedOffers "require"',
      spend: { signedOffers: "require" },
      refusal: /the seller sent no signed offer/,
    }),
  ];

  /** A seller asking PRICE for PAYEE, settling honestly, whose 402 carries what `extensions` makes of it. */
  const startOfferingSeller = (
    extensions: (url: string, entry: Entry) => Promise<Record<string, unknown> | undefined>,
  ) =>
    startHostileSeller({
      rpcUrl,
      relayer: devAccount(4),
      terms: {
        version: 2,
        offers: () => [{ amount: PRICE, payTo: PAYEE }],
        maxTimeoutSeconds: 60,
        receipt: "honest",
      },
      extensions: (required) => extensions(required.resource.url, required.accepts[0] as unknown as Entry),
    });

  it.each(cases.map((make, i) => [make("http://127.0.0.1").name, i] as const))("%s", async (_name, i) => {
    let current: Case | undefined;
    const seller = await startOfferingSeller(async (url, entry) =>
      current?.offers ? offerExtension(await current.offers(url, entry)) : undefined,
    );
    closers.push(seller.close);
    current = cases[i]?.(seller.url) as Case;
    const { pay, ledgerPath, decisions } = guardedPayer(policy(current.spend));
    const [payerBefore, payeeBefore] = [await balance(payer.address), await balance(PAYEE)];
    await expect(pay(seller.url)).rejects.toThrow(current.refusal);
    expect(seller.held).toEqual([]); // no signature reached the seller
    expect(decisions.map((d) => d.decision.decision)).toEqual(["deny"]);
    expect(decisions[0]?.decision.reasons.join()).toMatch(current.refusal);
    expect(readLedger(ledgerPath)).toEqual([]); // nothing reserved, nothing signed
    expect([await balance(payer.address), await balance(PAYEE)]).toEqual([payerBefore, payeeBefore]);
  });

  it("control: the same seller with an honest, trusted offer is paid and settles on chain", async () => {
    const seller = await startOfferingSeller(async (url, entry) =>
      offerExtension([await signedOffer(honestPayload(url, entry))]),
    );
    closers.push(seller.close);
    const { pay, ledgerPath } = guardedPayer(
      policy({
        signedOffers: "require",
        trustedOfferSigners: { [new URL(seller.url).origin]: [SELLER_KEY.address] },
      }),
    );
    const payeeBefore = await balance(PAYEE);
    expect((await pay(seller.url)).status).toBe(200);
    expect(foldLedger(readLedger(ledgerPath))).toMatchObject([
      { state: "settled", offerSigner: SELLER_KEY.address },
    ]);
    expect(await balance(PAYEE)).toBe(payeeBefore + BigInt(PRICE));
  });
});

describe("generated: no mutated offer gets a payment signed", () => {
  const RESOURCE = "https://seller.example/v1/thing";
  const entry = {
    scheme: "exact",
    network: "eip155:8453",
    asset: BASE_USDC_ADDRESS,
    payTo: PAYEE,
    amount: PRICE,
    maxTimeoutSeconds: 60,
    extra: { name: "USD Coin", version: "2" },
  };
  const terms = (offers: unknown[]): PaymentRequired =>
    ({
      x402Version: 2,
      resource: { url: RESOURCE, description: "", mimeType: "application/json" },
      accepts: [{ ...entry }],
      extensions: offerExtension(offers),
    }) as PaymentRequired;
  /**
   * Whether the guarded client signs: the real x402HTTPClient and wrapFetchWithPayment, over a fetch
   * that answers the 402 in-process (no socket, no chain) and 200 to whatever is signed.
   */
  async function signs(offers: unknown[]): Promise<boolean> {
    const client = guardClient(
      new x402HTTPClient(registerExactEvmScheme(new x402Client(), { signer: payer })),
      {
        policy: policy({
          rpc: undefined,
          trustedOfferSigners: { "https://seller.example": [SELLER_KEY.address] },
        }),
        ledgerPath: ledgerFile(),
      },
    );
    const seller = async (input: RequestInfo | URL, init?: RequestInit) =>
      new Request(input, init).headers.has("payment-signature")
        ? new Response("{}", { status: 200 })
        : new Response("{}", {
            status: 402,
            headers: { "payment-required": Buffer.from(JSON.stringify(terms(offers))).toString("base64") },
          });
    return wrapFetchWithPayment(
      seller,
      client,
    )(RESOURCE).then(
      (response) => response.status === 200,
      (error: Error) => {
        if (!/spend policy/.test(error.message)) throw error;
        return false;
      },
    );
  }

  const hex = (bytes: number) =>
    fc.uint8Array({ minLength: bytes, maxLength: bytes }).map((b) => `0x${Buffer.from(b).toString("hex")}`);
  const honest = honestPayload(RESOURCE, entry) as unknown as Record<string, unknown>;
  const field = fc.constantFrom(
    "version",
    "resourceUrl",
    "scheme",
    "network",
    "asset",
    "payTo",
    "amount",
    "validUntil",
  );
  const otherValue = (name: string, old: unknown, signed: boolean) =>
    (
      ({
        version: fc.integer({ min: 0, max: 5 }),
        resourceUrl: fc.webUrl(),
        scheme: fc.constantFrom("upto", "exact ", "EXACT", "batch"),
        network: fc.constantFrom("eip155:1", "eip155:84532", "base", "eip155:8453 "),
        asset: hex(20),
        payTo: hex(20),
        amount: fc.bigInt({ min: 0n, max: 10n ** 12n }).map(String),
        // Signed truthfully, a later expiry is a valid offer: only a past one is a mutation that must fail.
        validUntil: fc.integer({ min: 0, max: signed ? Math.floor(Date.now() / 1000) : 2 ** 40 }),
      }) as Record<string, fc.Arbitrary<unknown>>
    )[name]?.filter((value) => value !== old) as fc.Arbitrary<unknown>;
  /** A mutation: a signed field changed after signing, a field signed truthfully but not the entry's, another key, or a broken signature. */
  const mutation = fc.oneof(
    field.chain((name) =>
      otherValue(name, honest[name], false).map((value) => ({ kind: "tampered" as const, name, value })),
    ),
    field.chain((name) =>
      otherValue(name, honest[name], true).map((value) => ({ kind: "signed" as const, name, value })),
    ),
    fc.constant({ kind: "other key" as const }),
    hex(65).map((signature) => ({ kind: "signature" as const, signature })),
  );

  it("every mutation of a valid offer is refused (the unmutated one is paid)", async () => {
    expect(await signs([await signedOffer(honest as unknown as OfferPayload)])).toBe(true);
    const seed = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
    console.log(`signed-offer mutations: seed ${seed} (replay with FC_SEED=${seed})`);
    let refused = 0;
    await fc.assert(
      fc.asyncProperty(mutation, async (m) => {
        const valid = await signedOffer({
          ...(honest as unknown as OfferPayload),
          validUntil: Math.floor(Date.now() / 1000) + 300,
        });
        let offer: EIP712SignedOffer;
        if (m.kind === "tampered") offer = { ...valid, payload: { ...valid.payload, [m.name]: m.value } };
        else if (m.kind === "signed")
          offer = await signedOffer({ ...valid.payload, [m.name]: m.value } as OfferPayload);
        else if (m.kind === "other key") offer = await signedOffer(valid.payload, OTHER_KEY);
        else offer = { ...valid, signature: m.signature };
        // A mutation that left the signed terms as they were (same value) is not a mutation.
        fc.pre(JSON.stringify(offer) !== JSON.stringify(valid) || m.kind === "other key");
        expect(await signs([offer])).toBe(false);
        refused++;
      }),
      { seed, numRuns: Number(process.env.FC_NUM_RUNS ?? 150) },
    );
    console.log(`signed-offer mutations: ${refused} mutated offers, all refused`);
  }, 120_000);
});
