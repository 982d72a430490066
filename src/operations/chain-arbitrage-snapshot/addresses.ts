import type { Address } from "viem";
import { LOCAL_DEX } from "../../chain/dex/local-dex.ts";
import { MULTICALL3_ADDRESS } from "../../chain/multicall3.ts";
import { BASE_USDC_ADDRESS } from "../../config.ts";

/** Every contract a snapshot reads. */
export interface ChainAddresses {
  usdc: Address;
  weth: Address;
  uniswapV3Factory: Address;
  uniswapV3Quoter: Address;
  aerodromeRouter: Address;
  aerodromeFactory: Address;
  slipstreamFactory: Address;
  slipstreamQuoter: Address;
  chainlinkEthUsd: Address;
  multicall3: Address;
  gasPriceOracle: Address;
}

/**
 * Base mainnet (chain 8453). Sources: Uniswap's "Base Deployments" page (v3 factory, QuoterV2),
 * Base's ecosystem-contracts page (Multicall3, v3 factory, QuoterV2), Aerodrome's published
 * addresses (Router, PoolFactory, Slipstream CLFactory and QuoterV2), Chainlink's Base feed list
 * (ETH / USD), the OP Stack predeploys (WETH, GasPriceOracle). docs/chain-arbitrage-snapshot.md.
 */
export const BASE_MAINNET_ADDRESSES: ChainAddresses = {
  usdc: BASE_USDC_ADDRESS,
  weth: "0x4200000000000000000000000000000000000006",
  uniswapV3Factory: "0x33128a8fC17869897dcE68Ed026d694621f6FDfD",
  uniswapV3Quoter: "0x3d4e44Eb1374240CE5F1B871ab261CD16335B76a",
  aerodromeRouter: "0xcF77a3Ba9A5CA399B7c97c74d54e5b1Beb874E43",
  aerodromeFactory: "0x420DD381b31aEf6683db6B902084cB0FFECe40Da",
  slipstreamFactory: "0x5e7BB104d84c7CB9B682AaC2F3d509f5F406809A",
  slipstreamQuoter: "0x254cF9E1E6e233aa1AC962CB9B05b2cfeAaE15b0",
  chainlinkEthUsd: "0x71041dddad3595F9CEd3DcCFBe3D1F4b0a16Bb70",
  multicall3: MULTICALL3_ADDRESS,
  gasPriceOracle: "0x420000000000000000000000000000000000000F",
};

/** The local chain's DEX (src/chain/dex/local-dex.ts): same interfaces, our deployment. */
export const LOCAL_CHAIN_ADDRESSES: ChainAddresses = {
  usdc: BASE_USDC_ADDRESS,
  weth: LOCAL_DEX.weth,
  uniswapV3Factory: LOCAL_DEX.uniswapV3Factory,
  uniswapV3Quoter: LOCAL_DEX.uniswapV3QuoterV2,
  aerodromeRouter: LOCAL_DEX.aerodromeRouter,
  aerodromeFactory: LOCAL_DEX.aerodromeFactory,
  slipstreamFactory: LOCAL_DEX.slipstream,
  slipstreamQuoter: LOCAL_DEX.slipstream,
  chainlinkEthUsd: LOCAL_DEX.chainlinkEthUsd,
  multicall3: MULTICALL3_ADDRESS,
  gasPriceOracle: LOCAL_DEX.gasPriceOracle,
};
