import {
  createSIWxMessage,
  createSIWxPayload,
  encodeSIWxHeader,
  SIGN_IN_WITH_X,
  type SIWxExtension,
  type SIWxPayload,
} from "@x402/extensions/sign-in-with-x";
import fc from "fast-check";
import { privateKeyToAccount } from "viem/accounts";
import { describe, expect, it, vi } from "vitest";
import { devPrivateKey } from "../../chain/dev-accounts.ts";
import { SqliteStore } from "../../store/sqlite/sqlite-store.ts";
import { SIGN_IN_MAX_AGE_MS, SignInChallenges, type SignInNonces, verifySignIn } from "./sign-in-with-x.ts";

const ORIGIN = "https://utility402.example";
const NETWORK = "eip155:8453";
const PATH = "/v1/products/csv-json-quality-toolkit";
const settings = { origin: ORIGIN, network: NETWORK };
const challenges = new SignInChallenges(settings);
const wallet = privateKeyToAccount(devPrivateKey(2));
const other = privateKeyToAccount(devPrivateKey(3));

/** The store's rule (first use wins), in memory: each property run gets its own. */
function memoryNonces(): SignInNonces {
  const used = new Set<string>();
  return {
    useSignInNonce: async (nonce) => {
      if (used.has(nonce)) return false;
      used.add(nonce);
      return true;
    },
  };
}

const check = (header: string, nonces: SignInNonces) =>
  verifySignIn(header, { settings, paths: [PATH], nonces, now: Date.now });

/** A fresh challenge of PATH, as a 402 carries it, with the chain the client picks. */
async function freshInfo() {
  const extension = (await challenges.challenge(PATH))[SIGN_IN_WITH_X] as SIWxExtension;
  const chain = extension.supportedChains[0] as SIWxExtension["supportedChains"][number];
  return { ...extension.info, chainId: chain.chainId, type: chain.type };
}

/** What the official client sends for that challenge, signed by `signer`. */
async function signed(info: Awaited<ReturnType<typeof freshInfo>>, signer = wallet) {
  return createSIWxPayload(info, signer, `${ORIGIN}${PATH}`);
}

/** One seed per run, printed; FC_SEED=<seed> replays it. */
const SEED = Number(process.env.FC_SEED ?? Date.now() % 0x7fffffff);
const report = (name: string) =>
  console.log(`sign-in-with-x ${name}: fast-check seed ${SEED} (FC_SEED=${SEED} replays it)`);

/** The fields of the signed message (signatureScheme is a client hint, not signed: see docs/sign-in.md). */
const SIGNED_FIELDS = [
  "domain",
  "address",
  "statement",
  "uri",
  "version",
  "chainId",
  "type",
  "nonce",
  "issuedAt",
  "expirationTime",
  "resources",
  "signature",
] as const;

/** A tampered copy of a signed payload: one field altered, truncated or dropped, or two fields' values swapped. */
const tampering = fc.oneof(
  fc.record({
    kind: fc.constant("alter" as const),
    field: fc.constantFrom(...SIGNED_FIELDS),
    text: fc.string(),
  }),
  fc.record({
    kind: fc.constant("truncate" as const),
    field: fc.constantFrom(...SIGNED_FIELDS),
    keep: fc.nat(),
  }),
  fc.record({ kind: fc.constant("drop" as const), field: fc.constantFrom(...SIGNED_FIELDS) }),
  fc.record({
    kind: fc.constant("swap" as const),
    field: fc.constantFrom(...SIGNED_FIELDS),
    with: fc.constantFrom(...SIGNED_FIELDS),
  }),
  fc.record({ kind: fc.constant("add-resource" as const), text: fc.webUrl() }),
  fc.record({ kind: fc.constant("other-address" as const) }),
  fc.record({ kind: fc.constant("header-truncated" as const), keep: fc.nat() }),
);
type Tampering = typeof tampering extends fc.Arbitrary<infer T> ? T : never;

/** The header with the tampering applied, or undefined when it changes nothing (no tampering at all). */
function tamper(payload: SIWxPayload, change: Tampering): string | undefined {
  const original = encodeSIWxHeader(payload);
  const copy: Record<string, unknown> = structuredClone(payload);
  const asText = (value: unknown) => (Array.isArray(value) ? value.join(",") : String(value ?? ""));
  switch (change.kind) {
    case "alter":
      copy[change.field] = change.field === "resources" ? [change.text] : change.text;
      break;
    case "truncate": {
      const value = asText(copy[change.field]);
      const cut = value.slice(0, change.keep % Math.max(1, value.length));
      copy[change.field] = change.field === "resources" ? [cut] : cut;
      break;
    }
    case "drop":
      delete copy[change.field];
      break;
    case "swap": {
      const value = copy[change.field];
      copy[change.field] = copy[change.with];
      copy[change.with] = value;
      break;
    }
    case "add-resource":
      copy.resources = [...((copy.resources as string[]) ?? []), change.text];
      break;
    case "other-address":
      copy.address = other.address;
      break;
    case "header-truncated":
      return original.slice(0, change.keep % original.length);
  }
  const header = encodeSIWxHeader(copy as SIWxPayload);
  return header === original ? undefined : header;
}

describe("sign-in-with-x: what is accepted", () => {
  it("accepts the official client's answer to a fresh challenge once, and refuses its replay", async () => {
    const nonces = memoryNonces();
    const header = encodeSIWxHeader(await signed(await freshInfo()));
    expect(await check(header, nonces)).toEqual({ address: wallet.address.toLowerCase() });
    const replay = await check(header, nonces);
    expect("rejected" in replay && replay.rejected.extensions.errors).toEqual([
      { pointer: "/nonce", message: expect.stringContaining("used already") },
    ]);
  });

  it("accepts each message once across instances whose clocks differ by up to four minutes (generated)", async () => {
    // Instances share one store; each checks messages, and forgets used nonces, by its own clock (NTP lost,
    // a VM resumed). Steps: time passes, a client signs a fresh challenge of one instance, or sends one of
    // the messages signed so far to one instance. Invariant after every step: no message accepted twice.
    report("instances with skewed clocks");
    // Each step first lets time pass (often none, else up to six minutes), then acts.
    const wait = fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 6 * 60_000 }));
    const step = fc.oneof(
      fc.record({ kind: fc.constant("sign" as const), wait, at: fc.nat() }),
      fc.record({ kind: fc.constant("send" as const), wait, message: fc.nat(), to: fc.nat() }),
    );
    const scenario = fc.record({
      offsets: fc.array(fc.integer({ min: -2 * 60_000, max: 2 * 60_000 }), { minLength: 2, maxLength: 3 }),
      steps: fc.array(step, { minLength: 10, maxLength: 30, size: "max" }),
    });
    const realStart = Date.now();
    let runs = 0;
    try {
      await fc.assert(
        fc.asyncProperty(scenario, async ({ offsets, steps }) => {
          runs++;
          const store = new SqliteStore(":memory:");
          let elapsed = 0;
          // An instance's clock, for the package's checks (Date.now) and the nonce store alike.
          const clockOf = (instance: number) => realStart + elapsed + (offsets[instance] as number);
          const messages: string[] = [];
          const accepted = new Map<string, number>();
          vi.useFakeTimers({ toFake: ["Date"] });
          try {
            for (const current of steps) {
              elapsed += current.wait;
              if (current.kind === "sign") {
                vi.setSystemTime(clockOf(current.at % offsets.length));
                messages.push(encodeSIWxHeader(await signed(await freshInfo())));
              } else if (messages.length > 0) {
                const instance = current.to % offsets.length;
                // One of the last three signed: older ones are mostly past their five minutes anyway.
                const recent = current.message % Math.min(3, messages.length);
                const header = messages[messages.length - 1 - recent] as string;
                vi.setSystemTime(clockOf(instance));
                const result = await verifySignIn(header, {
                  settings,
                  paths: [PATH],
                  nonces: store,
                  now: Date.now,
                });
                if (!("rejected" in result)) accepted.set(header, (accepted.get(header) ?? 0) + 1);
                expect(
                  accepted.get(header) ?? 0,
                  `instance ${instance}, offsets ${offsets}`,
                ).toBeLessThanOrEqual(1);
              }
            }
          } finally {
            vi.useRealTimers();
            await store.close();
          }
        }),
        { seed: SEED, numRuns: 150 },
      );
    } finally {
      console.log(`instances with skewed clocks: ${runs} scenarios run`);
    }
  });

  it("accepts no tampered message: every signed field altered, truncated, dropped or swapped (generated)", async () => {
    report("tampered messages");
    let tried = 0;
    await fc.assert(
      fc.asyncProperty(tampering, async (change) => {
        const payload = await signed(await freshInfo());
        const header = tamper(payload, change);
        fc.pre(header !== undefined);
        tried++;
        const nonces = memoryNonces();
        const result = await check(header as string, nonces);
        expect(result).toHaveProperty("rejected");
        if ("rejected" in result) {
          expect(result.rejected.status).toBe(401);
          expect(result.rejected.extensions.errors).toEqual([
            { pointer: expect.stringMatching(/^(\/[a-zA-Z]+)?$/), message: expect.any(String) },
          ]);
        }
        // The untouched message still signs in: the refusal is the tampering's, not a broken check.
        expect(await check(encodeSIWxHeader(payload), nonces)).toEqual({
          address: wallet.address.toLowerCase(),
        });
      }),
      { seed: SEED, numRuns: 300 },
    );
    expect(tried).toBeGreaterThan(200);
  });

  /** A message the wallet really signed, for a challenge altered in one field: another site's, chain's, route's, or time's. */
  const foreignChallenge = fc.oneof(
    fc.record({ field: fc.constant("domain" as const), value: fc.domain() }),
    fc.record({
      field: fc.constant("uri-origin" as const),
      value: fc.webUrl({ withQueryParameters: false }),
    }),
    fc.record({
      field: fc.constant("uri-path" as const),
      value: fc.constantFrom("/v1/products/agent-safe-paid-work-kit", "/v1/jobs", "/", "/v1/products/"),
    }),
    fc.record({
      field: fc.constant("chainId" as const),
      value: fc.integer({ min: 1, max: 2 ** 31 }).filter((id) => id !== 8453),
    }),
    fc.record({
      field: fc.constant("issuedAt-old" as const),
      value: fc.integer({ min: SIGN_IN_MAX_AGE_MS + 5_000, max: 400 * 86_400_000 }),
    }),
    fc.record({
      field: fc.constant("issuedAt-future" as const),
      value: fc.integer({ min: 5_000, max: 86_400_000 }),
    }),
    fc.record({ field: fc.constant("expired" as const), value: fc.integer({ min: 1_000, max: 290_000 }) }),
    fc.record({
      field: fc.constant("notBefore-future" as const),
      value: fc.integer({ min: 5_000, max: 86_400_000 }),
    }),
  );

  const POINTER_OF = {
    domain: "/domain",
    "uri-origin": "/uri",
    "uri-path": "/uri",
    chainId: "/chainId",
    "issuedAt-old": "/issuedAt",
    "issuedAt-future": "/issuedAt",
    expired: "/expirationTime",
    "notBefore-future": "/notBefore",
  } as const;

  it("refuses every genuinely signed message bound elsewhere: other domain, origin, route, chain, or time (generated)", async () => {
    report("messages bound elsewhere");
    await fc.assert(
      fc.asyncProperty(foreignChallenge, async (change) => {
        const info = await freshInfo();
        const now = Date.now();
        switch (change.field) {
          case "domain":
            fc.pre(change.value !== new URL(ORIGIN).host);
            info.domain = change.value;
            break;
          case "uri-origin":
            fc.pre(new URL(change.value).origin !== ORIGIN);
            info.uri = new URL(PATH, change.value).toString();
            break;
          case "uri-path":
            info.uri = `${ORIGIN}${change.value}`;
            break;
          case "chainId":
            info.chainId = `eip155:${change.value}`;
            break;
          case "issuedAt-old":
            info.issuedAt = new Date(now - change.value).toISOString();
            info.expirationTime = new Date(now + 60_000).toISOString();
            break;
          case "issuedAt-future":
            info.issuedAt = new Date(now + change.value).toISOString();
            break;
          case "expired":
            info.issuedAt = new Date(now - 295_000).toISOString();
            info.expirationTime = new Date(now - change.value).toISOString();
            break;
          case "notBefore-future":
            info.notBefore = new Date(now + change.value).toISOString();
            break;
        }
        // Signed as the wallet would sign it anywhere (the client's own origin check is not the server's defence).
        const payload = await createSIWxPayload(
          info,
          wallet,
          info.domain === new URL(ORIGIN).host ? new URL(info.uri).origin : `http://${info.domain}`,
        ).catch(() => undefined);
        const message =
          payload ??
          ({
            ...info,
            address: wallet.address,
            signature: await wallet.signMessage({
              message: createSIWxMessage(info, wallet.address),
            }),
          } as SIWxPayload);
        const result = await check(encodeSIWxHeader(message), memoryNonces());
        expect("rejected" in result && result.rejected.extensions.errors).toEqual([
          { pointer: POINTER_OF[change.field], message: expect.any(String) },
        ]);
      }),
      { seed: SEED, numRuns: 200 },
    );
  });
});
