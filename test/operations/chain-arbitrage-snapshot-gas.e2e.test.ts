/**
 * Issue 37: every size's gas is priced cold, as a swap sent on its own costs. Quoted in one
 * aggregate3, a later quote of a pool finds its accounts and storage warm (EIP-2929) and reports
 * less gas: the same size then cost two different amounts in one answer. Also: local-mode answers
 * say they are simulated, the largest profitable size is given, and a block asked for by number
 * that is old is a warning.
 */
import fc from "fast-check";
import { createPublicClient, http, type PublicClient, parseAbi } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { devPrivateKey } from "../../src/chain/dev-accounts.ts";
import { LOCAL_DEX } from "../../src/chain/dex/local-dex.ts";
import { createPayer } from "../../src/client/paying-fetch.ts";
import { LOCAL_CHAIN_ADDRESSES } from "../../src/operations/chain-arbitrage-snapshot/addresses.ts";
import { parseUnitsExact } from "../../src/operations/chain-arbitrage-snapshot/decimal.ts";
import {
  chainArbitrageSnapshot,
  snapshotClient,
} from "../../src/operations/chain-arbitrage-snapshot/index.ts";
import {
  type ChainArbitrageSnapshotOutput,
  ChainArbitrageSnapshotRequest,
  ChainArbitrageSnapshotResponse,
} from "../../src/operations/chain-arbitrage-snapshot/schema.ts";
import {
  type SnapshotSettings,
  sampleTransaction,
  takeSnapshot,
} from "../../src/operations/chain-arbitrage-snapshot/snapshot.ts";
import { venue } from "../../src/operations/chain-arbitrage-snapshot/venues.ts";
import { chainRpc } from "../helpers/payment-faults.ts";
import { jsonPost, startTestService, type TestService } from "../helpers/service.ts";

const USDC_UNIT = 1_000_000n;
const GAS_PRICE_ORACLE = parseAbi(["function getL1Fee(bytes) view returns (uint256)"]);
const settings = (extra: Partial<SnapshotSettings> = {}): SnapshotSettings => ({
  addresses: LOCAL_CHAIN_ADDRESSES,
  priorityFeeWei: 1_000_000n,
  feedMaxAgeSeconds: 1200,
  ...extra,
});
const input = (body: object) => ChainArbitrageSnapshotRequest.parse(body);
/** Gas per round trip (buy venue → gasUsd) of every row of an answer: the amount first, then the ladder. */
const gasBySize = (body: ChainArbitrageSnapshotOutput) => [
  { usdcIn: body.amountUsdc, gas: body.roundTrips.map((trip) => trip.gasUsd) },
  ...body.sizes.ladder.map((row) => ({ usdcIn: row.usdcIn, gas: row.roundTrips.map((trip) => trip.gasUsd) })),
];

describe("chain-arbitrage-snapshot: gas per size, simulated answers, sizes and block age", () => {
  let service: TestService;
  let chain: PublicClient;
  let client: PublicClient;
  let block: number;
  const payer = createPayer(devPrivateKey(5));

  beforeAll(async () => {
    service = await startTestService({}, { operations: [chainArbitrageSnapshot] });
    const rpcUrl = service.localChain?.rpcUrl as string;
    chain = createPublicClient({ transport: http(rpcUrl) });
    client = snapshotClient([rpcUrl], 10_000);
    block = Number(await chain.getBlockNumber());
  });
  afterAll(async () => {
    await service?.stop();
  });

  /** The gas of each round trip at `size` quoted alone: the amount of a snapshot without a ladder. */
  const alone = new Map<string, string[]>();
  async function gasAlone(size: bigint, venues: string[]): Promise<string[]> {
    const key = `${size} ${venues.join(" ")}`;
    const known = alone.get(key);
    if (known) return known;
    const body = await takeSnapshot(
      client,
      settings({ ladder: () => [] }),
      input({ amountUsdc: Number(size / USDC_UNIT), venues, blockNumber: block }),
    );
    const gas = body.roundTrips.map((trip) => trip.gasUsd);
    alone.set(key, gas);
    return gas;
  }

  it("the amount asked for and the same size in the ladder cost the same gas", async () => {
    // amountUsdc 10 is the ladder's smallest size too (the ladder starts at amount / 100, at least 10).
    const body = await takeSnapshot(client, settings(), input({ amountUsdc: 10, blockNumber: block }));
    expect(body.sizes.ladder[0]?.usdcIn).toBe("10");
    expect(body.sizes.ladder[0]?.roundTrips.map((trip) => trip.gasUsd)).toEqual(
      body.roundTrips.map((trip) => trip.gasUsd),
    );
    // And both equal the size quoted alone.
    const venues = [body.legs[0]?.venue, body.legs[2]?.venue] as string[];
    expect(body.roundTrips.map((trip) => trip.gasUsd)).toEqual(await gasAlone(10n * USDC_UNIT, venues));
  });

  it("generated ladders (sizes and order at random): gas per size is independent of position, never below the size alone", async () => {
    const seed = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
    console.log(`chain-arbitrage-snapshot gas property: fast-check seed ${seed}`);
    const venues = ["uniswap-v3:500", "aerodrome-slipstream:100"];
    await fc.assert(
      fc.asyncProperty(
        // Whole USDC the local pools fill; repeats allowed (the same size twice in one ladder).
        fc.array(fc.integer({ min: 10, max: 20_000 }), { minLength: 1, maxLength: 6 }),
        fc.integer({ min: 10, max: 20_000 }),
        async (ladder, amount) => {
          const body = await takeSnapshot(
            client,
            settings({ ladder: () => ladder.map((usdc) => BigInt(usdc) * USDC_UNIT) }),
            input({ amountUsdc: amount, venues, blockNumber: block }),
          );
          const rows = gasBySize(body);
          expect(rows.map((row) => row.usdcIn)).toEqual([amount, ...ladder].map(String));
          for (const row of rows) {
            const single = await gasAlone(BigInt(row.usdcIn) * USDC_UNIT, venues);
            for (const [t, gas] of row.gas.entries()) {
              expect(gas, `${row.usdcIn} USDC, round trip ${t}`).not.toBeNull();
              expect(
                parseUnitsExact(gas as string, 6),
                `${row.usdcIn} USDC, round trip ${t}: below the size alone`,
              ).toBeGreaterThanOrEqual(parseUnitsExact(single[t] as string, 6));
              expect(gas, `${row.usdcIn} USDC, round trip ${t}`).toBe(single[t]);
            }
          }
        },
      ),
      { seed, numRuns: 12 },
    );
  });

  it("each leg pays the L1 data fee of its own transaction: a sell's bytes are not the buy's", async () => {
    const { usdc, weth, gasPriceOracle } = LOCAL_CHAIN_ADDRESSES;
    const l1Fee = (transaction: `0x${string}`) =>
      chain.readContract({
        address: gasPriceOracle,
        abi: GAS_PRICE_ORACLE,
        functionName: "getL1Fee",
        args: [transaction],
        blockNumber: BigInt(block),
      });
    const body = await takeSnapshot(client, settings(), input({ amountUsdc: 500, blockNumber: block }));
    for (const [t, trip] of body.roundTrips.entries()) {
      const [buy, sell] = [body.legs[2 * t], body.legs[2 * t + 1]];
      const buyFee = await l1Fee(
        sampleTransaction(
          venue(trip.buyOn, LOCAL_CHAIN_ADDRESSES),
          usdc,
          weth,
          parseUnitsExact(trip.usdcIn, 6),
        ),
      );
      const sellFee = await l1Fee(
        sampleTransaction(
          venue(trip.sellOn, LOCAL_CHAIN_ADDRESSES),
          weth,
          usdc,
          parseUnitsExact(trip.wethOut, 18),
        ),
      );
      expect(BigInt(buy?.l1FeeWei as string)).toBe(buyFee);
      expect(BigInt(sell?.l1FeeWei as string)).toBe(sellFee);
      // The WETH amount (18 decimals) has more non-zero bytes than the USDC amount (6): the sell
      // venue's transaction is not the size of a buy of the same USDC on that venue.
      const sameVenueBuyFee = await l1Fee(
        sampleTransaction(
          venue(trip.sellOn, LOCAL_CHAIN_ADDRESSES),
          usdc,
          weth,
          parseUnitsExact(trip.usdcIn, 6),
        ),
      );
      expect(sellFee).toBeGreaterThan(sameVenueBuyFee);
      expect(BigInt(trip.l1FeeWei)).toBe(buyFee + sellFee);
    }
  });

  it("a local-mode answer says it is simulated, and names the feed as a stand-in", async () => {
    const response = await payer.fetch(
      `${service.url}/v1/chain-arbitrage-snapshot`,
      jsonPost({ amountUsdc: 500 }),
    );
    expect(response.status).toBe(200);
    const body = ChainArbitrageSnapshotResponse.parse(await response.json());
    expect(body.simulated).toBe(true);
    expect(body.chainId).toBe(8453);
    expect(body.ethUsd.source).toMatch(
      /^simulated ETH \/ USD feed on the local chain 0x[0-9a-fA-F]{40} \(a stand-in, not Chainlink\)$/,
    );
    expect(body.ethUsd.source).toContain(LOCAL_DEX.chainlinkEthUsd);
    // Outside local mode (the same contracts read as if they were Base's): not simulated, Chainlink.
    const real = await takeSnapshot(client, settings(), input({ amountUsdc: 500, blockNumber: block }));
    expect(real.simulated).toBe(false);
    expect(real.ethUsd.source).toBe(`Chainlink ETH / USD ${LOCAL_DEX.chainlinkEthUsd}`);
  });

  it("names the largest profitable size beside the smallest (break-even), from the ladder itself", async () => {
    const body = await takeSnapshot(client, settings(), input({ amountUsdc: 500, blockNumber: block }));
    const best = body.sizes.best;
    expect(best).not.toBeNull();
    const t = body.roundTrips.findIndex((trip) => trip.buyOn === best?.buyOn);
    const rows = [
      { usdcIn: body.amountUsdc, net: body.roundTrips[t]?.netPnlUsdc },
      ...body.sizes.ladder.map((row) => ({ usdcIn: row.usdcIn, net: row.roundTrips[t]?.netPnlUsdc })),
    ].flatMap((row) =>
      row.net ? [{ size: parseUnitsExact(row.usdcIn, 6), net: parseUnitsExact(row.net, 6) }] : [],
    );
    const profitable = rows.filter((row) => row.net > 0n).map((row) => row.size);
    expect(profitable.length).toBeGreaterThan(1);
    const largest = profitable.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)).at(-1) as bigint;
    expect(body.sizes.largestProfitable).toMatchObject({ buyOn: best?.buyOn, sellOn: best?.sellOn });
    expect(parseUnitsExact(body.sizes.largestProfitable?.usdcIn as string, 6)).toBe(largest);
    expect(parseUnitsExact(body.sizes.breakEven?.usdcIn as string, 6)).toBeLessThanOrEqual(largest);
    // Nothing profitable: no largest profitable size.
    const costly = await takeSnapshot(
      client,
      settings({ priorityFeeWei: 10n ** 15n }),
      input({ amountUsdc: 500, blockNumber: block }),
    );
    expect(costly.sizes.largestProfitable).toBeNull();
    expect(costly.sizes.largestProfitableOpenEnded).toBe(false);
    expect(costly.sizes.breakEvenOpenEnded).toBe(false);
    // The default ladder: a pick at the ladder's end is flagged exactly when it is that end.
    const quoted = rows.map((row) => row.size).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    expect(body.sizes.largestProfitableOpenEnded).toBe(largest === quoted.at(-1));
    expect(body.sizes.breakEvenOpenEnded).toBe(
      parseUnitsExact(body.sizes.breakEven?.usdcIn as string, 6) === quoted[0],
    );
  });

  it("when every size quoted is profitable, both ends are flagged open: the true range may be wider", async () => {
    const first = await takeSnapshot(client, settings(), input({ amountUsdc: 500, blockNumber: block }));
    const t = first.roundTrips.findIndex((trip) => trip.buyOn === first.sizes.best?.buyOn);
    const profitable = [
      { usdcIn: first.amountUsdc, net: first.roundTrips[t]?.netPnlUsdc },
      ...first.sizes.ladder.map((row) => ({ usdcIn: row.usdcIn, net: row.roundTrips[t]?.netPnlUsdc })),
    ]
      .filter((row) => row.net && parseUnitsExact(row.net, 6) > 0n)
      .map((row) => parseUnitsExact(row.usdcIn, 6));
    expect(profitable.length).toBeGreaterThan(1);
    const [amount, ...ladder] = profitable as [bigint, ...bigint[]];
    const all = await takeSnapshot(
      client,
      settings({ ladder: () => ladder }),
      input({ amountUsdc: Number(amount) / 1e6, blockNumber: block }),
    );
    const sorted = [...profitable].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    expect(parseUnitsExact(all.sizes.largestProfitable?.usdcIn as string, 6)).toBe(sorted.at(-1));
    expect(parseUnitsExact(all.sizes.breakEven?.usdcIn as string, 6)).toBe(sorted[0]);
    expect(all.sizes.largestProfitableOpenEnded).toBe(true);
    expect(all.sizes.breakEvenOpenEnded).toBe(true);
    expect(all.warnings).toEqual(
      expect.arrayContaining([
        expect.stringContaining("the largest profitable size may be above it"),
        expect.stringContaining("the break-even size may be below it"),
      ]),
    );
  });

  it("a block requested by number that is old gets an age warning (it is not refused)", async () => {
    const head = await chain.getBlock({ blockNumber: BigInt(block) });
    const at = (ageSeconds: number) =>
      settings({
        blockWarnAgeSeconds: 30,
        blockMaxAgeSeconds: 120,
        now: () => (Number(head.timestamp) + ageSeconds) * 1000,
      });
    const ageWarnings = (body: ChainArbitrageSnapshotOutput) =>
      body.warnings.filter((w) => w.includes(" old "));
    const fresh = await takeSnapshot(client, at(5), input({ blockNumber: block }));
    expect(ageWarnings(fresh)).toEqual([]);
    const old = await takeSnapshot(client, at(400), input({ blockNumber: block }));
    expect(ageWarnings(old)).toEqual([
      `block ${block} was requested by number and is 400 s old (more than 30 s): the answer is the chain as it was then, not now`,
    ]);
  });

  it("atomic execution adds a cold call per router the executor reaches: one when both venues share SwapRouter02", async () => {
    for (const [venues, routers] of [
      [["uniswap-v3:500", "uniswap-v3:3000"], 1],
      [["uniswap-v3:500", "aerodrome-slipstream:100"], 2],
    ] as const) {
      const separate = await takeSnapshot(client, settings(), input({ venues, blockNumber: block }));
      const atomic = await takeSnapshot(
        client,
        settings(),
        input({ venues, blockNumber: block, execution: "atomic" }),
      );
      for (const [i, trip] of atomic.roundTrips.entries()) {
        const apart = separate.roundTrips[i] as (typeof separate.roundTrips)[number];
        expect(trip.gasUnits, venues.join(" ")).toBe(apart.gasUnits - 21_000 + routers * 2_600 + 5_000);
      }
    }
  });

  // Runs last: it moves the local chain's clock 45 s ahead (within the 120 s a payment stays valid).
  it("in local mode ages blocks against the local chain's head: latest is never old, an old block requested by number is", async () => {
    const rpcUrl = service.localChain?.rpcUrl as string;
    const pinned = await chain.getBlock();
    await chainRpc(rpcUrl, "evm_mine", [Number(pinned.timestamp) + 45]);
    const paid = async (body: object) => {
      const response = await payer.fetch(`${service.url}/v1/chain-arbitrage-snapshot`, jsonPost(body));
      expect(response.status).toBe(200);
      return ChainArbitrageSnapshotResponse.parse(await response.json());
    };
    const ageWarnings = (body: ChainArbitrageSnapshotOutput) =>
      body.warnings.filter((w) => w.includes(" old "));

    const latest = await paid({ amountUsdc: 500 });
    expect(latest.blockAgeSeconds).toBe(0);
    expect(ageWarnings(latest)).toEqual([]);

    const old = await paid({ amountUsdc: 500, blockNumber: Number(pinned.number) });
    const head = await chain.getBlock();
    expect(old.blockAgeSeconds).toBeGreaterThanOrEqual(45);
    expect(old.blockAgeSeconds).toBeLessThanOrEqual(Number(head.timestamp - pinned.timestamp));
    expect(ageWarnings(old)).toEqual([
      `block ${pinned.number} was requested by number and is ${old.blockAgeSeconds} s old (more than 30 s): the answer is the chain as it was then, not now`,
    ]);

    // The service clock plays no part against the chain's head: a far-off clock changes nothing.
    const headAged = (now: number) =>
      takeSnapshot(
        client,
        settings({ blockWarnAgeSeconds: 30, blockAgeReference: "chain-head", now: () => now }),
        input({ amountUsdc: 500, blockNumber: Number(head.number) }),
      );
    for (const now of [0, Date.now() + 86_400_000]) {
      const young = await headAged(now);
      expect(young.blockAgeSeconds).toBe(0);
      expect(ageWarnings(young)).toEqual([]);
    }
  });
});
