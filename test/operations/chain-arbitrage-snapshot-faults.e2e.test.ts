import { type ChildProcess, spawn } from "node:child_process";
import {
  type Abi,
  type Address,
  createPublicClient,
  encodeDeployData,
  encodeFunctionData,
  getContractAddress,
  type Hex,
  http,
  maxUint256,
  type PublicClient,
  parseAbi,
  parseEther,
  toHex,
} from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { devPrivateKey } from "../../src/chain/dev-accounts.ts";
import { ownArtifact, uniswapArtifact } from "../../src/chain/dex/artifacts.ts";
import { LOCAL_DEX, sqrtPriceX96 } from "../../src/chain/dex/local-dex.ts";
import { anvilBinary, USDC_ADMIN } from "../../src/chain/local-chain.ts";
import { createPayer } from "../../src/client/paying-fetch.ts";
import {
  type ChainAddresses,
  LOCAL_CHAIN_ADDRESSES,
} from "../../src/operations/chain-arbitrage-snapshot/addresses.ts";
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
import { ladderSizes, takeSnapshot } from "../../src/operations/chain-arbitrage-snapshot/snapshot.ts";
import { Problem } from "../../src/problem.ts";
import { freePort, jsonPost, startTestService, type TestService, usdcBalances } from "../helpers/service.ts";
import { startRpcStandIn } from "./chain-arbitrage-snapshot-rpc-stand-in.ts";

/**
 * The snapshot's faults on real contracts: a second Uniswap V3 deployment (Uniswap's published
 * factory, QuoterV2 and SwapRouter) with a narrow-range 0.05 % pool that runs out of WETH, an
 * initialised 0.3 % pool without liquidity, and a QuoterV2 that reads the wrong factory.
 */
const { usdc: USDC, weth: WETH } = LOCAL_CHAIN_ADDRESSES;
const DEPLOYER: Address = "0x0000000000000000000000000000000000f4a175";
const at = (nonce: number) => getContractAddress({ from: DEPLOYER, nonce: BigInt(nonce) });
const NARROW = {
  factory: at(0),
  quoter: at(1),
  router: at(2),
  liquidityProvider: at(3),
  // A QuoterV2 of the narrow deployment's factory, used against the local DEX's factory: it quotes
  // pools the configured factory does not have (its 0.3 % pool is empty) and fails.
};

const V3_FACTORY = parseAbi([
  "function createPool(address tokenA, address tokenB, uint24 fee) returns (address)",
  "function getPool(address, address, uint24) view returns (address)",
]);
const V3_POOL = parseAbi([
  "function initialize(uint160 sqrtPriceX96)",
  "function slot0() view returns (uint160 sqrtPriceX96, int24 tick, uint16, uint16, uint16, uint8, bool)",
]);
const ERC20 = parseAbi([
  "function approve(address, uint256) returns (bool)",
  "function mint(address, uint256) returns (bool)",
  "function deposit() payable",
]);
const SWAP_ROUTER = parseAbi([
  "function exactInputSingle((address tokenIn, address tokenOut, uint24 fee, address recipient, uint256 deadline, uint256 amountIn, uint256 amountOutMinimum, uint160 sqrtPriceLimitX96) params) payable returns (uint256 amountOut)",
]);
const AERODROME_ROUTER = parseAbi([
  "struct Route { address from; address to; bool stable; address factory; }",
  "function swapExactTokensForTokens(uint256 amountIn, uint256 amountOutMin, Route[] routes, address to, uint256 deadline) returns (uint256[] amounts)",
]);

/** Deploys the narrow deployment from DEPLOYER (impersonated): its addresses are known beforehand. */
async function deployNarrowDex(rpcUrl: string): Promise<{ narrowPool: Address; emptyPool: Address }> {
  const chain = createPublicClient({ transport: http(rpcUrl) });
  const request = chain.request as (args: { method: string; params: unknown[] }) => Promise<unknown>;
  await request({ method: "anvil_impersonateAccount", params: [DEPLOYER] });
  await request({ method: "anvil_impersonateAccount", params: [USDC_ADMIN] });
  await request({ method: "anvil_setBalance", params: [DEPLOYER, toHex(parseEther("100000"))] });
  const send = async (from: Address, to: Address | null, data: Hex, value = 0n) => {
    const hash = (await request({
      method: "eth_sendTransaction",
      params: [{ from, ...(to ? { to } : {}), data, gas: toHex(8_000_000n), value: toHex(value) }],
    })) as Hex;
    const receipt = await chain.waitForTransactionReceipt({ hash });
    expect(receipt.status).toBe("success");
  };
  const deploy = (artifact: { abi: Abi; bytecode: Hex }, args: readonly unknown[] = []) =>
    send(
      DEPLOYER,
      null,
      encodeDeployData({ abi: artifact.abi, bytecode: artifact.bytecode, args } as Parameters<
        typeof encodeDeployData
      >[0]),
    );
  const call = (to: Address, abi: Abi, functionName: string, args: readonly unknown[]) =>
    send(
      DEPLOYER,
      to,
      encodeFunctionData({ abi, functionName, args } as Parameters<typeof encodeFunctionData>[0]),
    );
  try {
    await deploy(uniswapArtifact("v3-core/artifacts/contracts/UniswapV3Factory.sol/UniswapV3Factory.json"));
    await deploy(uniswapArtifact("v3-periphery/artifacts/contracts/lens/QuoterV2.sol/QuoterV2.json"), [
      NARROW.factory,
      WETH,
    ]);
    await deploy(uniswapArtifact("v3-periphery/artifacts/contracts/SwapRouter.sol/SwapRouter.json"), [
      NARROW.factory,
      WETH,
    ]);
    await deploy(ownArtifact("UniswapV3LiquidityProvider"), [NARROW.factory]);
    await send(
      USDC_ADMIN,
      USDC,
      encodeFunctionData({ abi: ERC20, functionName: "mint", args: [DEPLOYER, 10_000_000n * 10n ** 6n] }),
    );
    await send(DEPLOYER, WETH, "0x", parseEther("5000"));
    for (const token of [USDC, WETH]) {
      for (const spender of [NARROW.liquidityProvider, NARROW.router, LOCAL_DEX.aerodromeRouter]) {
        await call(token, ERC20, "approve", [spender, maxUint256]);
      }
    }
    const pools: Address[] = [];
    for (const fee of [500, 3000]) {
      await call(NARROW.factory, V3_FACTORY, "createPool", [USDC, WETH, fee]);
      const pool = await chain.readContract({
        address: NARROW.factory,
        abi: V3_FACTORY,
        functionName: "getPool",
        args: [USDC, WETH, fee],
      });
      await call(pool, V3_POOL, "initialize", [sqrtPriceX96(3000)]);
      pools.push(pool);
    }
    const [narrowPool, emptyPool] = pools as [Address, Address];
    // The 0.05 % pool: liquidity from 3 % above the price (~100 WETH to sell) to 25 % below it (deep in
    // USDC), nothing beyond: buying more than ~300,000 USDC of WETH runs it dry.
    const [, tick] = await chain.readContract({ address: narrowPool, abi: V3_POOL, functionName: "slot0" });
    const lower = Math.floor((tick - 2900) / 10) * 10;
    const upper = Math.ceil((tick + 300) / 10) * 10;
    const sqrtP = Math.sqrt(1.0001 ** tick);
    const sqrtUpper = Math.sqrt(1.0001 ** upper);
    const liquidity = BigInt(Math.floor((100e18 * sqrtP * sqrtUpper) / (sqrtUpper - sqrtP)));
    await call(NARROW.liquidityProvider, ownArtifact("UniswapV3LiquidityProvider").abi, "mint", [
      narrowPool,
      lower,
      upper,
      liquidity,
    ]);
    return { narrowPool, emptyPool };
  } finally {
    await request({ method: "anvil_stopImpersonatingAccount", params: [DEPLOYER] });
    await request({ method: "anvil_stopImpersonatingAccount", params: [USDC_ADMIN] });
  }
}

const settingsFor = (addresses: Partial<ChainAddresses>, extra: object = {}) => ({
  addresses: { ...LOCAL_CHAIN_ADDRESSES, ...addresses },
  priorityFeeWei: 1_000_000n,
  feedMaxAgeSeconds: 1200,
  ...extra,
});
const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => {
      throw new Error("expected a problem, got an answer");
    },
    (error: unknown) => {
      expect(error).toBeInstanceOf(Problem);
      return error as Problem;
    },
  );

const ageWarnings = (body: { warnings: string[] }) => body.warnings.filter((w) => w.includes(" old "));

describe("chain-arbitrage-snapshot against pools that cannot take the size, and faulty RPCs", () => {
  let service: TestService;
  let rpcUrl: string;
  let chain: PublicClient;
  let client: PublicClient;
  let balanceOf: ReturnType<typeof usdcBalances>;
  let pools: { narrowPool: Address; emptyPool: Address };
  const payer = createPayer(devPrivateKey(6));
  const snapshot = (body: unknown) =>
    payer.fetch(`${service.url}/v1/chain-arbitrage-snapshot`, jsonPost(body));
  const input = (body: object) => ChainArbitrageSnapshotRequest.parse(body);

  beforeAll(async () => {
    // The service's Uniswap V3 venues are the narrow deployment (deployed once the chain runs).
    service = await startTestService(
      { ARBITRAGE_UNISWAP_V3_FACTORY: NARROW.factory, ARBITRAGE_UNISWAP_V3_QUOTER: NARROW.quoter },
      { operations: [chainArbitrageSnapshot] },
    );
    rpcUrl = service.localChain?.rpcUrl as string;
    chain = createPublicClient({ transport: http(rpcUrl) });
    client = snapshotClient([rpcUrl], 5000);
    balanceOf = usdcBalances(rpcUrl);
    pools = await deployNarrowDex(rpcUrl);
  });
  afterAll(async () => {
    await service?.stop();
  });

  it("a size the narrow-range pool fills only in part is a 400 at /amountUsdc naming the largest size, never charged", async () => {
    const before = await balanceOf(payer.address);
    const response = await snapshot({
      amountUsdc: 1_000_000,
      venues: ["uniswap-v3:500", "aerodrome:volatile"],
    });
    expect(response.status).toBe(400);
    expect(response.headers.get("content-type")).toContain("application/problem+json");
    const { errors } = (await response.json()) as { errors: { pointer: string; message: string }[] };
    expect(errors).toEqual([
      {
        pointer: "/amountUsdc",
        message: expect.stringMatching(
          /^uniswap-v3:500 can fill only part of 1000000 USDC → WETH at block \d+: its liquidity runs out after [\d.]+ USDC; the largest amountUsdc it can take is [\d.]+$/,
        ),
      },
    ]);
    expect(await balanceOf(payer.address)).toBe(before);
    // The size named is what the quoter really fills: quoted on its own, it fills whole.
    const largest = Number(String(errors[0]?.message).split(" ").at(-1));
    expect(largest).toBeGreaterThan(200_000);
    expect(largest).toBeLessThan(400_000);
    const atLargest = await takeSnapshot(
      client,
      settingsFor({ uniswapV3Factory: NARROW.factory, uniswapV3Quoter: NARROW.quoter }),
      input({ amountUsdc: Math.floor(largest * 0.999), venues: ["uniswap-v3:500", "aerodrome:volatile"] }),
    );
    expect(atLargest.legs[0]?.pool).toBe(pools.narrowPool);
  });

  it("an empty pool is a 400 at its venue; a quoter failing on a pool with liquidity is a 502 with its reason", async () => {
    const venues = ["uniswap-v3:3000", "aerodrome:volatile"];
    // The narrow deployment's 0.3 % pool: initialised, no liquidity. QuoterV2 reverts "Unexpected error".
    const empty = await failure(
      takeSnapshot(
        client,
        settingsFor({ uniswapV3Factory: NARROW.factory, uniswapV3Quoter: NARROW.quoter }),
        input({ venues }),
      ),
    );
    expect(empty.status).toBe(400);
    expect(empty.extensions.errors).toEqual([
      {
        pointer: "/venues/0",
        message: expect.stringContaining(
          `uniswap-v3:3000's USDC/WETH pool (${pools.emptyPool}) has no liquidity`,
        ),
      },
    ]);
    // The local DEX's 0.3 % pool has liquidity, but the quoter reads the other factory: same revert, 502.
    const failing = await failure(
      takeSnapshot(client, settingsFor({ uniswapV3Quoter: NARROW.quoter }), input({ venues })),
    );
    expect(failing.status).toBe(502);
    expect(failing.detail).toContain(`uniswap-v3:3000's quoter failed on 1000 USDC → WETH`);
    expect(failing.detail).toContain(`although its pool has liquidity: "Unexpected error"`);
    // Through the service: the empty pool answers 400 before the charge.
    const before = await balanceOf(payer.address);
    const response = await snapshot({ venues });
    expect(response.status).toBe(400);
    expect((await response.json()).errors[0].pointer).toBe("/venues/0");
    expect(await balanceOf(payer.address)).toBe(before);
  });

  it("the ladder: every size, both directions, quoted at the answer's block; sizes a pool cannot take are marked", async () => {
    const before = await balanceOf(payer.address);
    const response = await snapshot({ amountUsdc: 5000, venues: ["uniswap-v3:500", "aerodrome:volatile"] });
    expect(response.status).toBe(200);
    expect(await balanceOf(payer.address)).toBe(before - 30_000n);
    const body = (await response.json()) as ChainArbitrageSnapshotOutput;
    expect(ChainArbitrageSnapshotResponse.parse(body)).toEqual(body);
    const { ladder } = body.sizes;
    const sizes = ladderSizes(5000n * 10n ** 6n);
    expect(sizes).toHaveLength(8);
    expect(ladder.map((step) => parseUnitsExact(step.usdcIn, 6))).toEqual(sizes);
    expect([ladder[0]?.usdcIn, ladder.at(-1)?.usdcIn]).toEqual(["50", "500000"]);
    const block = BigInt(body.blockNumber);
    const simulate = async (venue: string, tokenIn: Address, tokenOut: Address, amountIn: bigint) => {
      if (venue === "aerodrome:volatile") {
        const { result } = await chain.simulateContract({
          account: DEPLOYER,
          address: LOCAL_DEX.aerodromeRouter,
          abi: AERODROME_ROUTER,
          functionName: "swapExactTokensForTokens",
          args: [
            amountIn,
            0n,
            [{ from: tokenIn, to: tokenOut, stable: false, factory: LOCAL_DEX.aerodromeFactory }],
            DEPLOYER,
            maxUint256,
          ],
          blockNumber: block,
        });
        return result.at(-1);
      }
      const { result } = await chain.simulateContract({
        account: DEPLOYER,
        address: NARROW.router,
        abi: SWAP_ROUTER,
        functionName: "exactInputSingle",
        args: [
          {
            tokenIn,
            tokenOut,
            fee: 500,
            recipient: DEPLOYER,
            deadline: maxUint256,
            amountIn,
            amountOutMinimum: 0n,
            sqrtPriceLimitX96: 0n,
          },
        ],
        blockNumber: block,
      });
      return result;
    };
    let fillable = 0;
    for (const step of ladder) {
      expect(step.roundTrips.map((trip) => [trip.buyOn, trip.sellOn])).toEqual([
        ["uniswap-v3:500", "aerodrome:volatile"],
        ["aerodrome:volatile", "uniswap-v3:500"],
      ]);
      for (const trip of step.roundTrips) {
        if (!trip.fillable) {
          expect(trip.reason).toContain("partial fill");
          expect(trip.netPnlUsdc).toBeNull();
          continue;
        }
        fillable += 1;
        const usdcIn = parseUnitsExact(step.usdcIn, 6);
        const wethOut = parseUnitsExact(trip.wethOut as string, 18);
        // Both legs of every size are what the swaps return at the answer's one block.
        expect(await simulate(trip.buyOn, USDC, WETH, usdcIn)).toBe(wethOut);
        expect(await simulate(trip.sellOn, WETH, USDC, wethOut)).toBe(
          parseUnitsExact(trip.usdcBack as string, 6),
        );
        const gross = parseUnitsExact(trip.usdcBack as string, 6) - usdcIn;
        expect(parseUnitsExact(trip.grossPnlUsdc as string, 6)).toBe(gross);
        expect(parseUnitsExact(trip.netPnlUsdc as string, 6)).toBe(
          gross - parseUnitsExact(trip.gasUsd as string, 6),
        );
      }
    }
    // Buying 500,000 USDC of WETH runs the narrow pool's ~100 WETH dry; selling into its deep USDC
    // side (the other direction) fills. The small sizes fill both ways.
    expect(ladder.at(-1)?.roundTrips.map((trip) => trip.fillable)).toEqual([false, true]);
    expect(ladder[0]?.roundTrips.map((trip) => trip.fillable)).toEqual([true, true]);
    expect(fillable).toBeGreaterThanOrEqual(12);
    // The best size is the highest net over the ladder and the amount; break-even the smallest size of
    // that direction that nets ≥ 0.
    const candidates = [
      ...body.roundTrips.map((trip) => ({ ...trip, usdcIn: trip.usdcIn })),
      ...ladder.flatMap((step) =>
        step.roundTrips.filter((trip) => trip.fillable).map((trip) => ({ ...trip, usdcIn: step.usdcIn })),
      ),
    ].map((trip) => ({
      usdcIn: parseUnitsExact(trip.usdcIn, 6),
      direction: trip.buyOn,
      net: parseUnitsExact(trip.netPnlUsdc as string, 6),
    }));
    const top = candidates.reduce((a, b) =>
      b.net > a.net || (b.net === a.net && b.usdcIn < a.usdcIn) ? b : a,
    );
    expect(body.sizes.best).toMatchObject({
      buyOn: top.direction,
      netPnlUsdc: String(Number(top.net) / 1e6),
    });
    expect(parseUnitsExact(body.sizes.best?.usdcIn as string, 6)).toBe(top.usdcIn);
    if (top.net >= 0n) {
      const lowest = candidates
        .filter((c) => c.direction === top.direction && c.net >= 0n)
        .reduce((a, b) => (b.usdcIn < a.usdcIn ? b : a));
      expect(parseUnitsExact(body.sizes.breakEven?.usdcIn as string, 6)).toBe(lowest.usdcIn);
    } else {
      expect(body.sizes.breakEven).toBeNull();
    }
  });

  it("atomic execution prices one transaction: one intrinsic gas, a cold call to each router, the executor's dispatch, one L1 fee", async () => {
    const venues = ["aerodrome:volatile", "uniswap-v3:500"] as const;
    const blockNumber = Number(await chain.getBlockNumber());
    const settings = settingsFor({ uniswapV3Factory: NARROW.factory, uniswapV3Quoter: NARROW.quoter });
    const separate = await takeSnapshot(client, settings, input({ venues, blockNumber }));
    const atomic = await takeSnapshot(client, settings, input({ venues, blockNumber, execution: "atomic" }));
    expect(atomic.execution).toBe("atomic");
    expect(atomic.legs).toEqual(separate.legs);
    for (const [i, trip] of atomic.roundTrips.entries()) {
      const apart = separate.roundTrips[i] as (typeof separate.roundTrips)[number];
      expect([trip.transactions, apart.transactions]).toEqual([1, 2]);
      // Aerodrome's Router and SwapRouter02: two routers, each reached cold from the executor
      // (EIP-2929, 2,600), where a swap sent alone has its router warm as the transaction's `to`.
      expect(trip.gasUnits).toBe(apart.gasUnits - 21_000 + 2 * 2_600 + 5_000);
      // One transaction carrying both swaps costs more L1 bytes than either alone, less than both.
      expect(BigInt(trip.l1FeeWei)).toBeLessThan(BigInt(apart.l1FeeWei));
      expect(BigInt(trip.gasWei)).toBeLessThan(BigInt(apart.gasWei));
      expect(parseUnitsExact(trip.netPnlUsdc, 6)).toBeGreaterThanOrEqual(
        parseUnitsExact(apart.netPnlUsdc, 6),
      );
    }
  });

  it("a lagging RPC's latest block is a warning past the warning age, a 502 past the limit; a pinned block is not", async () => {
    const head = await chain.getBlock();
    const settings = (ageSeconds: number) =>
      settingsFor(
        {},
        {
          blockWarnAgeSeconds: 30,
          blockMaxAgeSeconds: 120,
          now: () => (Number(head.timestamp) + ageSeconds) * 1000,
        },
      );
    const fresh = await takeSnapshot(client, settings(2), input({}));
    expect(fresh.blockAgeSeconds).toBe(2);
    expect(ageWarnings(fresh)).toEqual([]);
    const lagging = await takeSnapshot(client, settings(45), input({}));
    expect(lagging.blockAgeSeconds).toBe(45);
    expect(ageWarnings(lagging)).toEqual([
      expect.stringContaining("latest block is 45 s old (more than 30 s)"),
    ]);
    const stale = await failure(takeSnapshot(client, settings(400), input({})));
    expect(stale.status).toBe(502);
    expect(stale.detail).toContain(
      `latest block ${head.number} is 400 s old (more than 120 s): the RPC lags`,
    );
    // A block asked for by number is not refused for its age, but an old one is a warning (issue 37).
    const pinned = await takeSnapshot(client, settings(400), input({ blockNumber: Number(head.number) }));
    expect(ageWarnings(pinned)).toEqual([
      `block ${head.number} was requested by number and is 400 s old (more than 30 s): the answer is the chain as it was then, not now`,
    ]);
  });

  it("pins the second read by the first one's block hash", async () => {
    const standIn = await startRpcStandIn(rpcUrl);
    try {
      const body = await takeSnapshot(snapshotClient([standIn.url], 5000), settingsFor({}), input({}));
      // The second read: the shared aggregate3 and each quote that measures gas in a call of its own.
      const [header, first, ...second] = standIn.requests;
      expect([header?.method, first?.method]).toEqual(["eth_getBlockByNumber", "eth_call"]);
      expect(second.length).toBeGreaterThan(1);
      for (const call of second) {
        expect(call.method).toBe("eth_call");
        expect(call.params[1]).toEqual({ blockHash: body.blockHash });
      }
    } finally {
      await standIn.close();
    }
  });

  it("an RPC of another chain (id 84532) is a 502 naming it, before any pool is looked up", async () => {
    const port = await freePort();
    const anvil = startAnvil(port, 84532);
    try {
      const other = `http://127.0.0.1:${port}`;
      const otherChain = createPublicClient({ transport: http(other) });
      for (let i = 0; ; i++) {
        if (
          await otherChain.getChainId().then(
            () => true,
            () => false,
          )
        )
          break;
        if (i > 200) throw new Error("the second anvil did not start");
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      // Multicall3 placed as on every chain, nothing else: the DEX addresses have no code there.
      const code = await chain.getCode({ address: LOCAL_CHAIN_ADDRESSES.multicall3 });
      await (otherChain.request as (args: { method: string; params: unknown[] }) => Promise<unknown>)({
        method: "anvil_setCode",
        params: [LOCAL_CHAIN_ADDRESSES.multicall3, code],
      });
      const wrong = await failure(takeSnapshot(snapshotClient([other], 5000), settingsFor({}), input({})));
      expect(wrong.status).toBe(502);
      expect(wrong.detail).toContain("the chain RPC serves chain 84532, not Base (8453)");
    } finally {
      await stopProcess(anvil);
    }
  });
});

function startAnvil(port: number, chainId: number): ChildProcess {
  return spawn(
    anvilBinary(),
    ["--port", String(port), "--host", "127.0.0.1", "--chain-id", String(chainId), "--silent"],
    {
      stdio: "ignore",
    },
  );
}

async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGTERM");
  await exited;
}
