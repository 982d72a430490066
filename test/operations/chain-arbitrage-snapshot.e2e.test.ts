import {
  type Address,
  createPublicClient,
  createTestClient,
  createWalletClient,
  http,
  maxUint256,
  type PublicClient,
  parseAbi,
  parseEther,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { base } from "viem/chains";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { devPrivateKey } from "../../src/chain/dev-accounts.ts";
import {
  ensureLocalDex,
  LOCAL_DEX,
  LOCAL_DEX_DEPLOYER,
  LOCAL_ETH_USD,
  LOCAL_SLIPSTREAM_FEE,
} from "../../src/chain/dex/local-dex.ts";
import { createPayer, paymentReceipt } from "../../src/client/paying-fetch.ts";
import { createLogger } from "../../src/log.ts";
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
  VENUES,
  type VenueId,
} from "../../src/operations/chain-arbitrage-snapshot/schema.ts";
import { takeSnapshot } from "../../src/operations/chain-arbitrage-snapshot/snapshot.ts";
import { Problem } from "../../src/problem.ts";
import { jsonPost, startTestService, type TestService, usdcBalances } from "../helpers/service.ts";
import { startRpcStandIn } from "./chain-arbitrage-snapshot-rpc-stand-in.ts";

const PRICE = 30_000n; // USD 0.03 in USDC atomic units
const { usdc: USDC, weth: WETH } = LOCAL_CHAIN_ADDRESSES;

const ERC20 = parseAbi(["function approve(address, uint256) returns (bool)", "function deposit() payable"]);
const SWAP_ROUTER = parseAbi([
  "function exactInputSingle((address tokenIn, address tokenOut, uint24 fee, address recipient, uint256 deadline, uint256 amountIn, uint256 amountOutMinimum, uint160 sqrtPriceLimitX96) params) payable returns (uint256 amountOut)",
]);
const AERODROME_ROUTER = parseAbi([
  "struct Route { address from; address to; bool stable; address factory; }",
  "function swapExactTokensForTokens(uint256 amountIn, uint256 amountOutMin, Route[] routes, address to, uint256 deadline) returns (uint256[] amounts)",
]);
const AERODROME_FACTORY = parseAbi(["function setFee(bool stable, uint256 fee)"]);
const FEED = parseAbi(["function postAnswer(int256 answer, uint256 timestamp)"]);

const units = (leg: { direction: string }, side: "in" | "out") =>
  (leg.direction === "USDC->WETH") === (side === "in") ? 6 : 18;

/** Every identity the response promises, checked in integers. */
function checkArithmetic(body: ChainArbitrageSnapshotOutput) {
  expect(ChainArbitrageSnapshotResponse.parse(body)).toEqual(body);
  const gasPrice = BigInt(body.gas.baseFeeWei) + BigInt(body.gas.priorityFeeWei);
  expect(BigInt(body.gas.gasPriceWei)).toBe(gasPrice);
  for (const leg of body.legs) {
    expect(BigInt(leg.gasCostWei)).toBe(BigInt(leg.gasUnits) * gasPrice + BigInt(leg.l1FeeWei));
  }
  const price = parseUnitsExact(body.ethUsd.price, 8);
  body.roundTrips.forEach((trip, i) => {
    const [buy, sell] = [body.legs[2 * i], body.legs[2 * i + 1]] as [
      ChainArbitrageSnapshotOutput["legs"][number],
      ChainArbitrageSnapshotOutput["legs"][number],
    ];
    // The sell leg spends exactly what the buy leg returned, on the other venue.
    expect([buy.venue, buy.direction, sell.venue, sell.direction]).toEqual([
      trip.buyOn,
      "USDC->WETH",
      trip.sellOn,
      "WETH->USDC",
    ]);
    expect(buy.amountIn).toBe(trip.usdcIn);
    expect(buy.amountOut).toBe(trip.wethOut);
    expect(sell.amountIn).toBe(trip.wethOut);
    expect(sell.amountOut).toBe(trip.usdcBack);
    const usdcIn = parseUnitsExact(trip.usdcIn, 6);
    const gross = parseUnitsExact(trip.usdcBack, 6) - usdcIn;
    expect(parseUnitsExact(trip.grossPnlUsdc, 6)).toBe(gross);
    // Separate: two transactions, each leg's own gas and L1 fee. Atomic: one transaction, one
    // intrinsic 21,000 and one L1 fee for both swaps.
    const atomic = body.execution === "atomic";
    expect(trip.transactions).toBe(atomic ? 1 : 2);
    expect(trip.gasUnits).toBe(buy.gasUnits + sell.gasUnits - (atomic ? 21_000 : 0));
    if (!atomic) expect(BigInt(trip.l1FeeWei)).toBe(BigInt(buy.l1FeeWei) + BigInt(sell.l1FeeWei));
    const gasWei = BigInt(trip.gasUnits) * gasPrice + BigInt(trip.l1FeeWei);
    expect(BigInt(trip.gasWei)).toBe(gasWei);
    if (!atomic) expect(gasWei).toBe(BigInt(buy.gasCostWei) + BigInt(sell.gasCostWei));
    // gasUsd: the wei at the feed's price, rounded up to a whole USDC atomic unit.
    const gasUsd = parseUnitsExact(trip.gasUsd, 6);
    expect(gasUsd * 10n ** 20n >= gasWei * price).toBe(true);
    expect((gasUsd - 1n) * 10n ** 20n < gasWei * price).toBe(true);
    expect(parseUnitsExact(trip.netPnlUsdc, 6)).toBe(gross - gasUsd);
    expect(trip.netBps).toBeCloseTo((Number(gross - gasUsd) / Number(usdcIn)) * 10_000, 2);
  });
  const best = [...body.roundTrips].sort((a, b) =>
    Number(parseUnitsExact(b.netPnlUsdc, 6) - parseUnitsExact(a.netPnlUsdc, 6)),
  )[0];
  expect(body.best).toEqual({
    buyOn: best?.buyOn,
    sellOn: best?.sellOn,
    netPnlUsdc: best?.netPnlUsdc,
    netBps: best?.netBps,
    profitable: parseUnitsExact(best?.netPnlUsdc as string, 6) > 0n,
  });
}

describe("chain-arbitrage-snapshot on the local chain", () => {
  let service: TestService;
  let rpcUrl: string;
  let chain: PublicClient;
  let balanceOf: ReturnType<typeof usdcBalances>;
  const payer = createPayer(devPrivateKey(4));
  const trader = privateKeyToAccount(devPrivateKey(8));
  const snapshot = (body: unknown) =>
    payer.fetch(`${service.url}/v1/chain-arbitrage-snapshot`, jsonPost(body));

  beforeAll(async () => {
    service = await startTestService({}, { operations: [chainArbitrageSnapshot] });
    rpcUrl = service.localChain?.rpcUrl as string;
    chain = createPublicClient({ transport: http(rpcUrl) });
    balanceOf = usdcBalances(rpcUrl);
    // The trader that simulates the swaps directly: some WETH, and both routers approved.
    const wallet = createWalletClient({ account: trader, transport: http(rpcUrl), chain: base });
    const send = async (request: Parameters<typeof wallet.writeContract>[0]) => {
      const hash = await wallet.writeContract({ ...request, gas: 200_000n } as any);
      expect((await chain.waitForTransactionReceipt({ hash })).status).toBe("success");
    };
    await send({ address: WETH, abi: ERC20, functionName: "deposit", value: parseEther("5") } as any);
    for (const token of [USDC, WETH]) {
      for (const spender of [LOCAL_DEX.uniswapV3SwapRouter, LOCAL_DEX.aerodromeRouter]) {
        await send({
          address: token,
          abi: ERC20,
          functionName: "approve",
          args: [spender, maxUint256],
        } as any);
      }
    }
  });
  afterAll(async () => {
    await service?.stop();
  });

  /** What the swap itself returns, simulated from the trader at the snapshot's block. */
  async function simulateSwap(
    venue: VenueId,
    tokenIn: Address,
    tokenOut: Address,
    amountIn: bigint,
    block: bigint,
  ) {
    if (venue === "aerodrome:volatile") {
      const { result } = await chain.simulateContract({
        account: trader.address,
        address: LOCAL_DEX.aerodromeRouter,
        abi: AERODROME_ROUTER,
        functionName: "swapExactTokensForTokens",
        args: [
          amountIn,
          0n,
          [{ from: tokenIn, to: tokenOut, stable: false, factory: LOCAL_DEX.aerodromeFactory }],
          trader.address,
          maxUint256,
        ],
        blockNumber: block,
      });
      return result[result.length - 1];
    }
    // Uniswap V3 pools, and the V3 pool behind the Slipstream stand-in, through Uniswap's SwapRouter.
    const fee = venue === "aerodrome-slipstream:100" ? LOCAL_SLIPSTREAM_FEE : Number(venue.split(":")[1]);
    const { result } = await chain.simulateContract({
      account: trader.address,
      address: LOCAL_DEX.uniswapV3SwapRouter,
      abi: SWAP_ROUTER,
      functionName: "exactInputSingle",
      args: [
        {
          tokenIn,
          tokenOut,
          fee,
          recipient: trader.address,
          deadline: maxUint256,
          amountIn,
          amountOutMinimum: 0n,
          sqrtPriceLimitX96: 0n,
        },
      ],
      blockNumber: block,
    });
    return result;
  }

  it("a paid snapshot charges USD 0.03 once; every leg's quote is what the swap returns at that block", async () => {
    const [payerBefore, payToBefore] = [await balanceOf(payer.address), await balanceOf(service.payTo)];
    const response = await snapshot({ amountUsdc: 500 });
    expect(response.status).toBe(200);
    const body = (await response.json()) as ChainArbitrageSnapshotOutput;
    expect(paymentReceipt(response)).toMatchObject({ success: true, network: "eip155:8453" });
    expect(await balanceOf(payer.address)).toBe(payerBefore - PRICE);
    expect(await balanceOf(service.payTo)).toBe(payToBefore + PRICE);

    expect(body).toMatchObject({
      simulated: true,
      chainId: 8453,
      pair: { usdc: USDC, weth: WETH },
      amountUsdc: "500",
      ethUsd: {
        price: "3000",
        source: `simulated ETH / USD feed on the local chain ${LOCAL_DEX.chainlinkEthUsd} (a stand-in, not Chainlink)`,
      },
    });
    // Only the ladder's open ends may be warned about here (checked in the gas test).
    expect(body.warnings.filter((w) => !w.includes("size quoted"))).toEqual([]);
    expect(body.legs.map((leg) => [leg.venue, leg.direction, leg.feeBps, leg.gasEstimateSource])).toEqual([
      ["uniswap-v3:500", "USDC->WETH", 5, "quoter"],
      ["aerodrome:volatile", "WETH->USDC", 30, "fixed"],
      ["aerodrome:volatile", "USDC->WETH", 30, "fixed"],
      ["uniswap-v3:500", "WETH->USDC", 5, "quoter"],
    ]);
    const block = await chain.getBlock({ blockNumber: BigInt(body.blockNumber) });
    expect(body.blockHash).toBe(block.hash);
    expect(body.gas.baseFeeWei).toBe(String(block.baseFeePerGas));
    for (const leg of body.legs) {
      const amountIn = parseUnitsExact(leg.amountIn, units(leg, "in"));
      const swapped = await simulateSwap(
        leg.venue,
        leg.tokenIn as Address,
        leg.tokenOut as Address,
        amountIn,
        block.number,
      );
      expect(swapped).toBe(parseUnitsExact(leg.amountOut, units(leg, "out")));
    }
    checkArithmetic(body);
    // Local prices: WETH is cheaper on the Aerodrome venue (2985) than on Uniswap's 0.05 % pool (3000).
    expect(body.best).toMatchObject({
      buyOn: "aerodrome:volatile",
      sellOn: "uniswap-v3:500",
      profitable: true,
    });
  });

  it("answers every pair of venues in both directions, and each quote matches the swap", async () => {
    const pairs = VENUES.flatMap((a, i) => VENUES.slice(i + 1).map((b) => [a, b] as [VenueId, VenueId]));
    expect(pairs).toHaveLength(6);
    for (const venues of pairs) {
      const response = await snapshot({ amountUsdc: 250.5, venues });
      expect(response.status, venues.join(" / ")).toBe(200);
      const body = (await response.json()) as ChainArbitrageSnapshotOutput;
      expect(body.roundTrips.map((trip) => [trip.buyOn, trip.sellOn])).toEqual([
        venues,
        [venues[1], venues[0]],
      ]);
      checkArithmetic(body);
      for (const leg of body.legs) {
        const amountIn = parseUnitsExact(leg.amountIn, units(leg, "in"));
        expect(
          await simulateSwap(
            leg.venue,
            leg.tokenIn as Address,
            leg.tokenOut as Address,
            amountIn,
            BigInt(body.blockNumber),
          ),
        ).toBe(parseUnitsExact(leg.amountOut, units(leg, "out")));
      }
    }
  });

  it("reads fees on-chain: raising the Aerodrome fee moves the result; the old block still answers the old fee", async () => {
    const venues = ["aerodrome:volatile", "uniswap-v3:3000"];
    const before = (await (await snapshot({ venues })).json()) as ChainArbitrageSnapshotOutput;
    const test = createTestClient({ mode: "anvil", transport: http(rpcUrl) });
    await test.impersonateAccount({ address: LOCAL_DEX_DEPLOYER });
    try {
      const feeManager = createWalletClient({
        account: LOCAL_DEX_DEPLOYER,
        transport: http(rpcUrl),
        chain: base,
      });
      const setFee = async (bps: bigint) => {
        const hash = await feeManager.writeContract({
          address: LOCAL_DEX.aerodromeFactory,
          abi: AERODROME_FACTORY,
          functionName: "setFee",
          args: [false, bps],
          gas: 100_000n,
        });
        expect((await chain.waitForTransactionReceipt({ hash })).status).toBe("success");
      };
      await setFee(100n);
      try {
        const after = (await (await snapshot({ venues })).json()) as ChainArbitrageSnapshotOutput;
        expect(after.blockNumber).toBeGreaterThan(before.blockNumber);
        expect(after.legs.map((leg) => leg.feeBps)).toEqual([100, 30, 30, 100]);
        // The Aerodrome legs give less; the Uniswap buy leg is untouched.
        expect(parseUnitsExact(after.legs[0]?.amountOut as string, 18)).toBeLessThan(
          parseUnitsExact(before.legs[0]?.amountOut as string, 18),
        );
        expect(parseUnitsExact(after.legs[3]?.amountOut as string, 6)).toBeLessThan(
          parseUnitsExact(before.legs[3]?.amountOut as string, 6),
        );
        expect(after.legs[2]?.amountOut).toBe(before.legs[2]?.amountOut);
        for (const trip of [0, 1]) {
          expect(parseUnitsExact(after.roundTrips[trip]?.grossPnlUsdc as string, 6)).toBeLessThan(
            parseUnitsExact(before.roundTrips[trip]?.grossPnlUsdc as string, 6),
          );
        }
        checkArithmetic(after);
        // Pinned to the earlier block, the snapshot sees the earlier state again.
        const pinned = (await (
          await snapshot({ venues, blockNumber: before.blockNumber })
        ).json()) as ChainArbitrageSnapshotOutput;
        expect(pinned.legs).toEqual(before.legs);
        expect(pinned.roundTrips).toEqual(before.roundTrips);
      } finally {
        await setFee(30n);
      }
    } finally {
      await test.stopImpersonatingAccount({ address: LOCAL_DEX_DEPLOYER });
    }
  });

  it("a stale ETH/USD feed is a warning; a chain that has the DEX does not get it again", async () => {
    const head = await chain.getBlockNumber();
    await ensureLocalDex(rpcUrl, createLogger("silent"));
    expect(await chain.getBlockNumber()).toBe(head);

    const test = createTestClient({ mode: "anvil", transport: http(rpcUrl) });
    await test.impersonateAccount({ address: LOCAL_DEX_DEPLOYER });
    const feedOwner = createWalletClient({
      account: LOCAL_DEX_DEPLOYER,
      transport: http(rpcUrl),
      chain: base,
    });
    const post = async (answer: bigint, secondsAgo: bigint) => {
      const { timestamp } = await chain.getBlock();
      const hash = await feedOwner.writeContract({
        address: LOCAL_DEX.chainlinkEthUsd,
        abi: FEED,
        functionName: "postAnswer",
        args: [answer, timestamp - secondsAgo],
        gas: 100_000n,
      });
      expect((await chain.waitForTransactionReceipt({ hash })).status).toBe("success");
    };
    try {
      await post(3100n * 10n ** 8n, 7200n);
      const response = await snapshot({});
      expect(response.status).toBe(200);
      const body = (await response.json()) as ChainArbitrageSnapshotOutput;
      expect(body.ethUsd.price).toBe("3100");
      expect(body.ethUsd.ageSeconds).toBeGreaterThanOrEqual(7200);
      expect(body.warnings.filter((w) => w.includes("ETH/USD"))).toEqual([
        expect.stringContaining("the ETH/USD feed is stale"),
      ]);
      checkArithmetic(body);
    } finally {
      await post(LOCAL_ETH_USD, 0n);
      await test.stopImpersonatingAccount({ address: LOCAL_DEX_DEPLOYER });
    }
  });

  it("a block before the pools existed is a 400 naming each missing pool, never charged", async () => {
    // The block of the DEX's first transaction (the Uniswap V3 factory): no pool exists yet.
    let block = 1n;
    while ((await chain.getTransactionCount({ address: LOCAL_DEX_DEPLOYER, blockNumber: block })) === 0)
      block++;
    const before = await balanceOf(payer.address);
    const response = await snapshot({
      venues: ["uniswap-v3:3000", "aerodrome-slipstream:100"],
      blockNumber: Number(block),
    });
    expect(response.status).toBe(400);
    expect(response.headers.get("content-type")).toContain("application/problem+json");
    expect((await response.json()).errors).toEqual([
      { pointer: "/venues/0", message: `uniswap-v3:3000 has no USDC/WETH pool at block ${block}` },
      { pointer: "/venues/1", message: `aerodrome-slipstream:100 has no USDC/WETH pool at block ${block}` },
    ]);
    const beforeMulticall = await snapshot({ blockNumber: 1 });
    expect(beforeMulticall.status).toBe(400);
    expect((await beforeMulticall.json()).errors).toEqual([
      {
        pointer: "/blockNumber",
        message: `Multicall3 (${LOCAL_CHAIN_ADDRESSES.multicall3}) has no code at block 1`,
      },
    ]);
    const future = await snapshot({ blockNumber: 1_000_000_000 });
    expect(future.status).toBe(400);
    expect((await future.json()).errors).toEqual([
      { pointer: "/blockNumber", message: expect.stringContaining("block 1000000000 is not available") },
    ]);
    expect(await balanceOf(payer.address)).toBe(before);
  });

  it("invalid venues and amounts are 400s with JSON Pointers, before any payment", async () => {
    const cases: [unknown, { pointer: string; message: unknown }[]][] = [
      [{ amountUsdc: 9.99 }, [{ pointer: "/amountUsdc", message: expect.stringContaining("10") }]],
      [{ amountUsdc: 1_000_001 }, [{ pointer: "/amountUsdc", message: expect.stringContaining("1000000") }]],
      [
        { amountUsdc: 100.0000001 },
        [{ pointer: "/amountUsdc", message: expect.stringContaining("6 decimals") }],
      ],
      [{ amountUsdc: "100" }, [{ pointer: "/amountUsdc", message: expect.any(String) }]],
      [
        { venues: ["uniswap-v3:500", "sushiswap"] },
        [{ pointer: "/venues/1", message: expect.stringContaining("must be one of") }],
      ],
      [
        { venues: ["uniswap-v3:500", "uniswap-v3:500"] },
        [{ pointer: "/venues/1", message: "the two venues must differ" }],
      ],
      [{ venues: ["uniswap-v3:500"] }, [{ pointer: "/venues", message: expect.any(String) }]],
      [{ blockNumber: -1 }, [{ pointer: "/blockNumber", message: expect.any(String) }]],
      [{ execution: "fast" }, [{ pointer: "/execution", message: "must be one of separate, atomic" }]],
      [{ amount: 5 }, [{ pointer: "/amount", message: "unknown property (not allowed)" }]],
    ];
    const before = await balanceOf(payer.address);
    for (const [body, errors] of cases) {
      for (const response of [
        await snapshot(body),
        await fetch(`${service.url}/v1/chain-arbitrage-snapshot`, jsonPost(body)),
      ]) {
        expect(response.status, JSON.stringify(body)).toBe(400);
        expect(response.headers.get("PAYMENT-REQUIRED")).toBeNull();
        expect((await response.json()).errors).toEqual(errors);
      }
    }
    expect(await balanceOf(payer.address)).toBe(before);
    // No body: the defaults (1000 USDC, uniswap-v3:500 against aerodrome:volatile) are a valid request.
    const unpaid = await fetch(`${service.url}/v1/chain-arbitrage-snapshot`, { method: "POST" });
    expect(unpaid.status).toBe(402);
    expect((await unpaid.json()).accepts[0].amount).toBe(PRICE.toString());
  });

  it("takes two RPC round trips per snapshot, and falls back to the next RPC when the first is down", async () => {
    const standIn = await startRpcStandIn(rpcUrl);
    try {
      const settings = {
        addresses: LOCAL_CHAIN_ADDRESSES,
        priorityFeeWei: 1_000_000n,
        feedMaxAgeSeconds: 1200,
      };
      const input = ChainArbitrageSnapshotRequest.parse({});
      await takeSnapshot(snapshotClient([standIn.url], 5000), settings, input);
      expect(standIn.roundTrips).toBe(2);
      // One batch (the header and aggregate3 at latest), then one batch of eth_calls pinned by that
      // block's hash: the shared aggregate3 and each quote that measures gas in a call of its own.
      const [header, first, ...second] = standIn.methods;
      expect([header, first]).toEqual(["eth_getBlockByNumber", "eth_call"]);
      expect(second.length).toBeGreaterThan(1);
      expect(new Set(second)).toEqual(new Set(["eth_call"]));
      await standIn.close();
      const viaFallback = await takeSnapshot(snapshotClient([standIn.url, rpcUrl], 5000), settings, input);
      expect(viaFallback.roundTrips).toHaveLength(2);
      const dead = await takeSnapshot(snapshotClient([standIn.url], 5000), settings, input).catch((e) => e);
      expect(dead).toBeInstanceOf(Problem);
      expect(dead.status).toBe(502);
    } finally {
      await standIn.close().catch(() => undefined);
    }
  });
});

describe("chain-arbitrage-snapshot when the chain RPC fails", () => {
  let service: TestService;
  let rpc: Awaited<ReturnType<typeof startRpcStandIn>>;
  const payer = createPayer(devPrivateKey(5));

  beforeAll(async () => {
    rpc = await startRpcStandIn(); // holds every request unanswered
    service = await startTestService(
      { RPC_URL: rpc.url, ARBITRAGE_RPC_TIMEOUT_MS: "300" },
      { operations: [chainArbitrageSnapshot] },
    );
  });
  afterAll(async () => {
    await service?.stop();
    await rpc?.close().catch(() => undefined);
  });

  it("a timed-out RPC, then a dead one: 502 problem+json, and the payer keeps every cent", async () => {
    const balanceOf = usdcBalances(service.localChain?.rpcUrl as string);
    const before = await balanceOf(payer.address);
    const hung = await payer.fetch(`${service.url}/v1/chain-arbitrage-snapshot`, jsonPost({}));
    expect(hung.status).toBe(502);
    expect(hung.headers.get("content-type")).toContain("application/problem+json");
    expect(await hung.json()).toMatchObject({
      status: 502,
      detail: expect.stringContaining("nothing was charged"),
    });
    expect(rpc.roundTrips).toBe(1);
    await rpc.close();
    const dead = await payer.fetch(
      `${service.url}/v1/chain-arbitrage-snapshot`,
      jsonPost({ amountUsdc: 20 }),
    );
    expect(dead.status).toBe(502);
    expect((await dead.json()).detail).toContain("could not be reached");
    expect(await balanceOf(payer.address)).toBe(before);
  });
});
