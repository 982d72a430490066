import type { Logger } from "pino";
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
  numberToHex,
  pad,
  parseAbi,
  parseEther,
  toHex,
} from "viem";
import { BASE_USDC_ADDRESS } from "../../config.ts";
import { USDC_ADMIN } from "../local-chain.ts";
import { type DeployableArtifact, ownArtifact, publishedArtifact, uniswapArtifact } from "./artifacts.ts";

/** WETH on Base (the OP Stack predeploy); the local chain places WETH9 at the same address. */
export const BASE_WETH_ADDRESS: Address = "0x4200000000000000000000000000000000000006";
/** The OP Stack GasPriceOracle predeploy (L1 data fee); the local chain places Optimism's published one there. */
export const GAS_PRICE_ORACLE_ADDRESS: Address = "0x420000000000000000000000000000000000000F";
/** The OP Stack L1Block predeploy: the L1 fee parameters the GasPriceOracle reads. */
export const L1_BLOCK_ADDRESS: Address = "0x4200000000000000000000000000000000000015";
/** Deploys the local DEX; nobody holds its key (anvil impersonation), so its nonces are ours alone. */
export const LOCAL_DEX_DEPLOYER: Address = "0x0000000000000000000000000000000000DE4D3E";

/** Local prices (USDC per WETH) differ slightly between venues, so round trips differ. */
export const LOCAL_PRICES = {
  "uniswap-v3:500": 3000,
  "uniswap-v3:3000": 3004,
  "aerodrome-slipstream:100": 3001,
  "aerodrome:volatile": 2985,
} as const;
/** Slipstream's tick spacing 100, served locally by a Uniswap V3 fee tier of 0.04 % with that spacing. */
export const LOCAL_SLIPSTREAM_FEE = 400;
export const LOCAL_ETH_USD = 3000n * 10n ** 8n; // the feed's answer, 8 decimals
/**
 * L1 fee parameters of the local chain's L1Block: a 1 gwei L1 base fee, a 1 wei blob base fee, and
 * Ecotone/Fjord scalars of the order Base uses (base fee scalar 2269, blob base fee scalar 1,055,762).
 */
export const LOCAL_L1 = {
  baseFee: 1_000_000_000n,
  blobBaseFee: 1n,
  baseFeeScalar: 2269n,
  blobBaseFeeScalar: 1_055_762n,
};
/** L1Block's storage (its published storage layout): basefee slot 1, blobBaseFee slot 7, scalars in slot 3. */
const L1_BLOCK_SLOTS = { basefee: 1, scalars: 3, blobBaseFee: 7 } as const;

const deployed = (nonce: number) => getContractAddress({ from: LOCAL_DEX_DEPLOYER, nonce: BigInt(nonce) });

/** Where the local DEX lives: fixed by the deployer's nonces, so known before (and after) deployment. */
export const LOCAL_DEX = {
  weth: BASE_WETH_ADDRESS,
  gasPriceOracle: GAS_PRICE_ORACLE_ADDRESS,
  uniswapV3Factory: deployed(0),
  uniswapV3QuoterV2: deployed(1),
  uniswapV3SwapRouter: deployed(2),
  uniswapV3LiquidityProvider: deployed(3),
  aerodromeFactory: deployed(4),
  aerodromeRouter: deployed(5),
  chainlinkEthUsd: deployed(6),
  // nonce 7: UniswapV3Factory.enableFeeAmount for the Slipstream stand-in's tier
  slipstream: deployed(8),
} as const;
export type LocalDex = typeof LOCAL_DEX;

const V3_FACTORY_ABI = parseAbi([
  "function createPool(address tokenA, address tokenB, uint24 fee) returns (address)",
  "function enableFeeAmount(uint24 fee, int24 tickSpacing)",
  "function getPool(address, address, uint24) view returns (address)",
]);
const V3_POOL_ABI = parseAbi(["function initialize(uint160 sqrtPriceX96)"]);
const ERC20_ABI = parseAbi([
  "function approve(address, uint256) returns (bool)",
  "function transfer(address, uint256) returns (bool)",
  "function mint(address, uint256) returns (bool)",
]);

/** Uniswap V3 tick spacing per fee tier (v3-core's defaults, plus the Slipstream stand-in's tier). */
const TICK_SPACING: Record<number, number> = { 500: 10, 3000: 60, [LOCAL_SLIPSTREAM_FEE]: 100 };
const MAX_TICK = 887272;
/** How much of each token every pool holds (per side, in USDC). */
const POOL_DEPTH_USDC = {
  "uniswap-v3:500": 10_000_000n,
  "uniswap-v3:3000": 4_000_000n,
  "aerodrome-slipstream:100": 4_000_000n,
  "aerodrome:volatile": 5_000_000n,
} as const;
const USDC_UNIT = 10n ** 6n;
const WETH_UNIT = 10n ** 18n;
const DEPLOY_GAS = 8_000_000n;
const CALL_GAS = 1_000_000n;
const CREATE_POOL_GAS = 6_000_000n;
/** Nonce of the deployer after the last set-up transaction: the mark that the DEX is complete. */
const FINAL_NONCE = 25;

/** Integer square root (Newton's method from above: exact for any size). */
const isqrt = (value: bigint): bigint => {
  if (value < 2n) return value;
  let x = value;
  let y = (x + 1n) >> 1n;
  while (y < x) {
    x = y;
    y = (x + value / x) >> 1n;
  }
  return x;
};

/**
 * sqrtPriceX96 of a USDC/WETH pool at `usdcPerWeth`. Uniswap sorts tokens: WETH (0x4200…) is token0,
 * USDC (0x8335…) token1, so the pool price is USDC atomic units per wei.
 */
export function sqrtPriceX96(usdcPerWeth: number): bigint {
  const priceNumerator = BigInt(Math.round(usdcPerWeth * 1e6)) * USDC_UNIT; // USDC atomic per WETH, ×1e6
  return isqrt((priceNumerator << 192n) / (WETH_UNIT * 1_000_000n));
}

/**
 * Deploys the local DEX when the chain does not have it yet: WETH9 at Base's WETH address, Uniswap V3
 * (factory, QuoterV2, SwapRouter from the npm artifacts) with 0.05 % and 0.3 % USDC/WETH pools, an
 * Aerodrome-shaped volatile pool with its factory and router, a Slipstream-shaped factory+quoter over
 * a 0.04 % pool with tick spacing 100, a Chainlink-shaped ETH/USD feed, and Optimism's published
 * GasPriceOracle and L1Block (Fjord's L1 fee). Idempotent: a chain that already has it (state kept across restarts) is left alone.
 * Every transaction has an explicit gas limit: anvil's estimates are exact and flake when the
 * block time moves.
 */
export async function ensureLocalDex(rpcUrl: string, log: Logger): Promise<LocalDex> {
  const client = createPublicClient({ transport: http(rpcUrl, { batch: true }) });
  const nonce = await client.getTransactionCount({ address: LOCAL_DEX_DEPLOYER });
  // Tests and the fee manager may send more from the deployer later: at or past the mark, it is all there.
  if (nonce >= FINAL_NONCE) return LOCAL_DEX;
  if (nonce !== 0) {
    throw new Error(
      `the local chain holds a partly deployed DEX (deployer nonce ${nonce} of ${FINAL_NONCE}); ` +
        "delete the local chain state file to start over",
    );
  }
  const started = Date.now();
  const request = client.request as (args: { method: string; params: unknown[] }) => Promise<unknown>;
  await request({ method: "anvil_impersonateAccount", params: [LOCAL_DEX_DEPLOYER] });
  await request({ method: "anvil_setBalance", params: [LOCAL_DEX_DEPLOYER, toHex(parseEther("100000"))] });
  await request({ method: "anvil_impersonateAccount", params: [USDC_ADMIN] });
  const weth9 = ownArtifact("WETH9");
  await request({ method: "anvil_setCode", params: [BASE_WETH_ADDRESS, weth9.deployedBytecode] });
  // Optimism's published GasPriceOracle and L1Block runtimes at their predeploy addresses, as on Base:
  // isEcotone and isFjord set (slot 0, bytes 0 and 1), the L1 fee parameters in L1Block's slots.
  await request({
    method: "anvil_setCode",
    params: [GAS_PRICE_ORACLE_ADDRESS, publishedArtifact("GasPriceOracle").deployedBytecode],
  });
  await request({
    method: "anvil_setCode",
    params: [L1_BLOCK_ADDRESS, publishedArtifact("L1Block").deployedBytecode],
  });
  const storage: [Address, number, bigint][] = [
    [GAS_PRICE_ORACLE_ADDRESS, 0, 0x0101n],
    [L1_BLOCK_ADDRESS, L1_BLOCK_SLOTS.basefee, LOCAL_L1.baseFee],
    [L1_BLOCK_ADDRESS, L1_BLOCK_SLOTS.blobBaseFee, LOCAL_L1.blobBaseFee],
    // sequenceNumber (uint64, bytes 0–7), blobBaseFeeScalar (uint32, 8–11), baseFeeScalar (uint32, 12–15)
    [
      L1_BLOCK_ADDRESS,
      L1_BLOCK_SLOTS.scalars,
      (LOCAL_L1.baseFeeScalar << 96n) | (LOCAL_L1.blobBaseFeeScalar << 64n),
    ],
  ];
  for (const [address, slot, value] of storage) {
    await request({
      method: "anvil_setStorageAt",
      params: [address, numberToHex(slot, { size: 32 }), pad(toHex(value))],
    });
  }

  const hashes: Hex[] = [];
  let next = 0;
  const send = async (from: Address, to: Address | null, data: Hex, gas: bigint, value = 0n) => {
    const hash = (await request({
      method: "eth_sendTransaction",
      params: [
        {
          from,
          ...(to ? { to } : {}),
          data,
          gas: toHex(gas),
          value: toHex(value),
          // Fixed fees: no estimation round trips, and above any base fee a fresh anvil reaches.
          maxFeePerGas: toHex(100_000_000_000n),
          maxPriorityFeePerGas: "0x0",
          ...(from === LOCAL_DEX_DEPLOYER ? { nonce: toHex(next++) } : {}),
        },
      ],
    })) as Hex;
    hashes.push(hash);
    return hash;
  };
  const deploy = (artifact: DeployableArtifact, args: readonly unknown[] = []) =>
    send(
      LOCAL_DEX_DEPLOYER,
      null,
      encodeDeployData({ abi: artifact.abi, bytecode: artifact.bytecode, args } as Parameters<
        typeof encodeDeployData
      >[0]),
      DEPLOY_GAS,
    );
  const call = (to: Address, abi: Abi, functionName: string, args: readonly unknown[], gas = CALL_GAS) =>
    send(
      LOCAL_DEX_DEPLOYER,
      to,
      encodeFunctionData({ abi, functionName, args } as Parameters<typeof encodeFunctionData>[0]),
      gas,
    );

  await deploy(uniswapArtifact("v3-core/artifacts/contracts/UniswapV3Factory.sol/UniswapV3Factory.json"));
  await deploy(uniswapArtifact("v3-periphery/artifacts/contracts/lens/QuoterV2.sol/QuoterV2.json"), [
    LOCAL_DEX.uniswapV3Factory,
    BASE_WETH_ADDRESS,
  ]);
  await deploy(uniswapArtifact("v3-periphery/artifacts/contracts/SwapRouter.sol/SwapRouter.json"), [
    LOCAL_DEX.uniswapV3Factory,
    BASE_WETH_ADDRESS,
  ]);
  await deploy(ownArtifact("UniswapV3LiquidityProvider"), [LOCAL_DEX.uniswapV3Factory]);
  await deploy(ownArtifact("AerodromeVolatileFactory"));
  await deploy(ownArtifact("AerodromeRouter"), [LOCAL_DEX.aerodromeFactory, BASE_WETH_ADDRESS]);
  await deploy(ownArtifact("ChainlinkFeedStandIn"), [8, "ETH / USD", LOCAL_ETH_USD]);
  await call(LOCAL_DEX.uniswapV3Factory, V3_FACTORY_ABI, "enableFeeAmount", [
    LOCAL_SLIPSTREAM_FEE,
    TICK_SPACING[LOCAL_SLIPSTREAM_FEE],
  ]);
  await deploy(ownArtifact("SlipstreamStandIn"), [
    LOCAL_DEX.uniswapV3Factory,
    LOCAL_DEX.uniswapV3QuoterV2,
    [100],
    [LOCAL_SLIPSTREAM_FEE],
  ]);

  // anvil may answer a send before it has mined it: a read of what a transaction created, and the final
  // check of every receipt, wait for the transaction (on a loaded machine getPool read the zero address
  // and the pool's mint reverted; a receipt asked for at once was not found).
  const mined = (hash: Hex) => client.waitForTransactionReceipt({ hash, pollingInterval: 10 });

  // Funds: USDC minted by the local USDC's minter (USDC_ADMIN, impersonated since the chain's
  // bootstrap), WETH wrapped from test ether.
  const usdcNeeded = Object.values(POOL_DEPTH_USDC).reduce((sum, usd) => sum + usd, 0n) * 2n * USDC_UNIT;
  await send(
    USDC_ADMIN,
    BASE_USDC_ADDRESS,
    encodeFunctionData({ abi: ERC20_ABI, functionName: "mint", args: [LOCAL_DEX_DEPLOYER, usdcNeeded] }),
    CALL_GAS,
  );
  await send(LOCAL_DEX_DEPLOYER, BASE_WETH_ADDRESS, "0x", CALL_GAS, parseEther("20000"));
  for (const token of [BASE_USDC_ADDRESS, BASE_WETH_ADDRESS] as Address[]) {
    await call(token, ERC20_ABI, "approve", [LOCAL_DEX.uniswapV3LiquidityProvider, maxUint256]);
  }

  // Uniswap V3 pools (and the Slipstream stand-in's), full-range liquidity at their prices.
  const v3Pools: [keyof typeof POOL_DEPTH_USDC, number][] = [
    ["uniswap-v3:500", 500],
    ["uniswap-v3:3000", 3000],
    ["aerodrome-slipstream:100", LOCAL_SLIPSTREAM_FEE],
  ];
  for (const [venue, fee] of v3Pools) {
    await mined(
      await call(
        LOCAL_DEX.uniswapV3Factory,
        V3_FACTORY_ABI,
        "createPool",
        [BASE_USDC_ADDRESS, BASE_WETH_ADDRESS, fee],
        CREATE_POOL_GAS,
      ),
    );
    const pool = await client.readContract({
      address: LOCAL_DEX.uniswapV3Factory,
      abi: V3_FACTORY_ABI,
      functionName: "getPool",
      args: [BASE_USDC_ADDRESS, BASE_WETH_ADDRESS, fee],
    });
    const sqrtPrice = sqrtPriceX96(LOCAL_PRICES[venue]);
    await call(pool, V3_POOL_ABI, "initialize", [sqrtPrice]);
    const spacing = TICK_SPACING[fee] as number;
    const upper = Math.floor(MAX_TICK / spacing) * spacing;
    // Full range: the USDC side holds about liquidity · sqrtPrice.
    const liquidity = ((POOL_DEPTH_USDC[venue] * USDC_UNIT) << 96n) / sqrtPrice;
    await call(LOCAL_DEX.uniswapV3LiquidityProvider, ownArtifact("UniswapV3LiquidityProvider").abi, "mint", [
      pool,
      -upper,
      upper,
      liquidity,
    ]);
  }

  // The Aerodrome-shaped volatile pool: both tokens transferred in, then mint() takes them.
  const aerodromeFactory = ownArtifact("AerodromeVolatileFactory");
  await mined(
    await call(
      LOCAL_DEX.aerodromeFactory,
      aerodromeFactory.abi,
      "createPool",
      [BASE_USDC_ADDRESS, BASE_WETH_ADDRESS, false],
      CREATE_POOL_GAS,
    ),
  );
  const aerodromePool = (await client.readContract({
    address: LOCAL_DEX.aerodromeFactory,
    abi: aerodromeFactory.abi,
    functionName: "getPool",
    args: [BASE_USDC_ADDRESS, BASE_WETH_ADDRESS, false],
  })) as Address;
  const usdcDepth = POOL_DEPTH_USDC["aerodrome:volatile"] * USDC_UNIT;
  const wethDepth = (usdcDepth * WETH_UNIT) / BigInt(LOCAL_PRICES["aerodrome:volatile"] * 1e6);
  await call(BASE_USDC_ADDRESS, ERC20_ABI, "transfer", [aerodromePool, usdcDepth]);
  await call(BASE_WETH_ADDRESS, ERC20_ABI, "transfer", [aerodromePool, wethDepth]);
  await call(aerodromePool, ownArtifact("AerodromeVolatilePool").abi, "mint", [LOCAL_DEX_DEPLOYER]);

  const receipts = await Promise.all(hashes.map(mined));
  const failed = receipts.findIndex((receipt) => receipt.status !== "success");
  if (failed >= 0)
    throw new Error(`local DEX set-up: transaction ${failed + 1} of ${hashes.length} reverted`);
  if (next !== FINAL_NONCE)
    throw new Error(`local DEX set-up sent ${next} transactions, expected ${FINAL_NONCE}`);
  await request({ method: "anvil_stopImpersonatingAccount", params: [LOCAL_DEX_DEPLOYER] });
  await request({ method: "anvil_stopImpersonatingAccount", params: [USDC_ADMIN] });
  log.info({ ...LOCAL_DEX, ms: Date.now() - started }, "local chain: DEX deployed");
  return LOCAL_DEX;
}
