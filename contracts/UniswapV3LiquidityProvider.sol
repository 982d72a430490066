// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {IERC20Minimal} from "./IERC20Minimal.sol";

interface IUniswapV3PoolMint {
    function token0() external view returns (address);
    function token1() external view returns (address);
    function fee() external view returns (uint24);
    function mint(address recipient, int24 tickLower, int24 tickUpper, uint128 amount, bytes calldata data)
        external
        returns (uint256 amount0, uint256 amount1);
}

interface IUniswapV3FactoryLookup {
    function getPool(address tokenA, address tokenB, uint24 fee) external view returns (address);
}

/// Adds Uniswap V3 liquidity for the local chain's pools: the pool's mint calls back here for the
/// tokens, which are pulled from the caller (who approved this contract).
contract UniswapV3LiquidityProvider {
    address public immutable factory;

    constructor(address _factory) {
        factory = _factory;
    }

    function mint(address pool, int24 tickLower, int24 tickUpper, uint128 liquidity)
        external
        returns (uint256 amount0, uint256 amount1)
    {
        return IUniswapV3PoolMint(pool).mint(msg.sender, tickLower, tickUpper, liquidity, abi.encode(msg.sender));
    }

    function uniswapV3MintCallback(uint256 amount0Owed, uint256 amount1Owed, bytes calldata data) external {
        IUniswapV3PoolMint pool = IUniswapV3PoolMint(msg.sender);
        address token0 = pool.token0();
        address token1 = pool.token1();
        // Only a pool of our factory may pull the payer's tokens.
        require(IUniswapV3FactoryLookup(factory).getPool(token0, token1, pool.fee()) == msg.sender, "LP: pool");
        address payer = abi.decode(data, (address));
        if (amount0Owed > 0) require(IERC20Minimal(token0).transferFrom(payer, msg.sender, amount0Owed), "LP: token0");
        if (amount1Owed > 0) require(IERC20Minimal(token1).transferFrom(payer, msg.sender, amount1Owed), "LP: token1");
    }
}
