// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

interface IUniswapV3FactoryFees {
    function getPool(address tokenA, address tokenB, uint24 fee) external view returns (address);
    function feeAmountTickSpacing(uint24 fee) external view returns (int24);
}

interface IUniswapQuoterV2 {
    struct QuoteExactInputSingleParams {
        address tokenIn;
        address tokenOut;
        uint256 amountIn;
        uint24 fee;
        uint160 sqrtPriceLimitX96;
    }

    function quoteExactInputSingle(QuoteExactInputSingleParams memory params)
        external
        returns (uint256 amountOut, uint160 sqrtPriceX96After, uint32 initializedTicksCrossed, uint256 gasEstimate);
}

/// Slipstream's CLFactory lookup (pools keyed by tick spacing) and QuoterV2 (quotes keyed by tick
/// spacing) in one local contract, backed by Uniswap V3 pools: Slipstream pools are Uniswap V3
/// pools with the key changed from fee to tick spacing, so a V3 pool with the same tick spacing
/// answers the same questions (fee(), slot0(), liquidity()) the same way.
contract SlipstreamStandIn {
    struct QuoteExactInputSingleParams {
        address tokenIn;
        address tokenOut;
        uint256 amountIn;
        int24 tickSpacing;
        uint160 sqrtPriceLimitX96;
    }

    address public immutable uniswapFactory;
    address public immutable uniswapQuoter;
    mapping(int24 => uint24) public tickSpacingToFee;

    constructor(address _uniswapFactory, address _uniswapQuoter, int24[] memory tickSpacings, uint24[] memory fees) {
        uniswapFactory = _uniswapFactory;
        uniswapQuoter = _uniswapQuoter;
        require(tickSpacings.length == fees.length, "Slipstream: lengths");
        for (uint256 i = 0; i < fees.length; i++) {
            require(IUniswapV3FactoryFees(_uniswapFactory).feeAmountTickSpacing(fees[i]) == tickSpacings[i], "Slipstream: spacing");
            tickSpacingToFee[tickSpacings[i]] = fees[i];
        }
    }

    function getPool(address tokenA, address tokenB, int24 tickSpacing) external view returns (address) {
        uint24 fee = tickSpacingToFee[tickSpacing];
        if (fee == 0) return address(0);
        return IUniswapV3FactoryFees(uniswapFactory).getPool(tokenA, tokenB, fee);
    }

    function quoteExactInputSingle(QuoteExactInputSingleParams memory params)
        external
        returns (uint256 amountOut, uint160 sqrtPriceX96After, uint32 initializedTicksCrossed, uint256 gasEstimate)
    {
        uint24 fee = tickSpacingToFee[params.tickSpacing];
        require(fee != 0, "Slipstream: no pool");
        return IUniswapQuoterV2(uniswapQuoter).quoteExactInputSingle(
            IUniswapQuoterV2.QuoteExactInputSingleParams(params.tokenIn, params.tokenOut, params.amountIn, fee, params.sqrtPriceLimitX96)
        );
    }
}
