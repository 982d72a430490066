// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {IERC20Minimal} from "./IERC20Minimal.sol";

/// A constant-product ("volatile") pool with the quoting and swapping interface of an Aerodrome
/// Pool: the fee is read from the factory on every quote and swap, in basis points. Liquidity is
/// added by transferring both tokens and calling mint(); the stand-in keeps no LP shares (nobody
/// withdraws from a local test venue).
contract AerodromeVolatilePool {
    address public immutable factory;
    address public immutable token0;
    address public immutable token1;
    bool public constant stable = false;

    uint256 public reserve0;
    uint256 public reserve1;
    uint256 public blockTimestampLast;
    bool private locked;

    event Sync(uint256 reserve0, uint256 reserve1);
    event Swap(address indexed sender, address indexed to, uint256 amount0In, uint256 amount1In, uint256 amount0Out, uint256 amount1Out);

    modifier lock() {
        require(!locked, "Pool: locked");
        locked = true;
        _;
        locked = false;
    }

    constructor(address _token0, address _token1) {
        factory = msg.sender;
        token0 = _token0;
        token1 = _token1;
    }

    function getReserves() external view returns (uint256 _reserve0, uint256 _reserve1, uint256 _blockTimestampLast) {
        return (reserve0, reserve1, blockTimestampLast);
    }

    function fee() public view returns (uint256) {
        return AerodromeVolatileFactory(factory).getFee(address(this), false);
    }

    /// Aerodrome's volatile formula: the fee (bps) comes off the input, then x·y = k.
    function getAmountOut(uint256 amountIn, address tokenIn) public view returns (uint256) {
        require(tokenIn == token0 || tokenIn == token1, "Pool: token");
        (uint256 reserveIn, uint256 reserveOut) = tokenIn == token0 ? (reserve0, reserve1) : (reserve1, reserve0);
        if (reserveIn == 0 || reserveOut == 0) return 0;
        uint256 afterFee = amountIn - (amountIn * fee()) / 10000;
        return (afterFee * reserveOut) / (reserveIn + afterFee);
    }

    /// Takes whatever was transferred in as liquidity.
    function mint(address) external lock returns (uint256) {
        _sync();
        return 0;
    }

    function swap(uint256 amount0Out, uint256 amount1Out, address to, bytes calldata) external lock {
        require(amount0Out > 0 || amount1Out > 0, "Pool: output");
        require(amount0Out < reserve0 && amount1Out < reserve1, "Pool: liquidity");
        require(to != token0 && to != token1, "Pool: to");
        if (amount0Out > 0) require(IERC20Minimal(token0).transfer(to, amount0Out), "Pool: transfer");
        if (amount1Out > 0) require(IERC20Minimal(token1).transfer(to, amount1Out), "Pool: transfer");
        (uint256 amount0In, uint256 amount1In) = _checkInvariant(amount0Out, amount1Out);
        _sync();
        emit Swap(msg.sender, to, amount0In, amount1In, amount0Out, amount1Out);
    }

    /// The inputs the swap received, after checking x·y = k holds with the fee taken off them.
    function _checkInvariant(uint256 amount0Out, uint256 amount1Out) private view returns (uint256 amount0In, uint256 amount1In) {
        uint256 balance0 = IERC20Minimal(token0).balanceOf(address(this));
        uint256 balance1 = IERC20Minimal(token1).balanceOf(address(this));
        amount0In = balance0 > reserve0 - amount0Out ? balance0 - (reserve0 - amount0Out) : 0;
        amount1In = balance1 > reserve1 - amount1Out ? balance1 - (reserve1 - amount1Out) : 0;
        require(amount0In > 0 || amount1In > 0, "Pool: input");
        uint256 feeBps = fee();
        uint256 adjusted0 = balance0 * 10000 - amount0In * feeBps;
        uint256 adjusted1 = balance1 * 10000 - amount1In * feeBps;
        require(adjusted0 * adjusted1 >= reserve0 * reserve1 * 1e8, "Pool: K");
    }

    function _sync() private {
        reserve0 = IERC20Minimal(token0).balanceOf(address(this));
        reserve1 = IERC20Minimal(token1).balanceOf(address(this));
        blockTimestampLast = block.timestamp;
        emit Sync(reserve0, reserve1);
    }
}

/// The pool registry and fee setting of an Aerodrome PoolFactory (volatile pools only).
contract AerodromeVolatileFactory {
    uint256 public constant MAX_FEE = 300; // 3 %, as Aerodrome's factory
    address public feeManager;
    uint256 public volatileFee = 30; // bps, Aerodrome's default for volatile pools
    mapping(address => uint256) public customFee;
    mapping(address => mapping(address => mapping(bool => address))) private pools;
    mapping(address => bool) public isPool;
    address[] public allPools;

    event PoolCreated(address indexed token0, address indexed token1, bool indexed stable, address pool, uint256);

    constructor() {
        feeManager = msg.sender;
    }

    function getPool(address tokenA, address tokenB, bool _stable) external view returns (address) {
        return pools[tokenA][tokenB][_stable];
    }

    function getFee(address pool, bool _stable) public view returns (uint256) {
        require(!_stable, "Factory: volatile only");
        uint256 custom = customFee[pool];
        return custom == 0 ? volatileFee : custom;
    }

    function setFee(bool _stable, uint256 _fee) external {
        require(msg.sender == feeManager, "Factory: not fee manager");
        require(!_stable, "Factory: volatile only");
        require(_fee > 0 && _fee <= MAX_FEE, "Factory: fee");
        volatileFee = _fee;
    }

    function setCustomFee(address pool, uint256 _fee) external {
        require(msg.sender == feeManager, "Factory: not fee manager");
        require(_fee <= MAX_FEE && isPool[pool], "Factory: fee");
        customFee[pool] = _fee;
    }

    function createPool(address tokenA, address tokenB, bool _stable) external returns (address pool) {
        require(!_stable, "Factory: volatile only");
        require(tokenA != tokenB && tokenA != address(0) && tokenB != address(0), "Factory: tokens");
        (address token0, address token1) = tokenA < tokenB ? (tokenA, tokenB) : (tokenB, tokenA);
        require(pools[token0][token1][false] == address(0), "Factory: exists");
        pool = address(new AerodromeVolatilePool{salt: keccak256(abi.encodePacked(token0, token1, false))}(token0, token1));
        pools[token0][token1][false] = pool;
        pools[token1][token0][false] = pool;
        isPool[pool] = true;
        allPools.push(pool);
        emit PoolCreated(token0, token1, false, pool, allPools.length);
    }
}

/// The quoting and swapping entry points of Aerodrome's Router, for single-pool routes.
contract AerodromeRouter {
    struct Route {
        address from;
        address to;
        bool stable;
        address factory;
    }

    address public immutable defaultFactory;
    address public immutable weth;

    constructor(address _factory, address _weth) {
        defaultFactory = _factory;
        weth = _weth;
    }

    function poolFor(address tokenA, address tokenB, bool _stable, address _factory) public view returns (address) {
        return AerodromeVolatileFactory(_factory == address(0) ? defaultFactory : _factory).getPool(tokenA, tokenB, _stable);
    }

    /// As Aerodrome: a hop through a missing pool quotes 0 rather than reverting.
    function getAmountsOut(uint256 amountIn, Route[] memory routes) public view returns (uint256[] memory amounts) {
        require(routes.length >= 1, "Router: route");
        amounts = new uint256[](routes.length + 1);
        amounts[0] = amountIn;
        for (uint256 i = 0; i < routes.length; i++) {
            address factory = routes[i].factory == address(0) ? defaultFactory : routes[i].factory;
            address pool = poolFor(routes[i].from, routes[i].to, routes[i].stable, factory);
            if (pool != address(0) && AerodromeVolatileFactory(factory).isPool(pool)) {
                amounts[i + 1] = AerodromeVolatilePool(pool).getAmountOut(amounts[i], routes[i].from);
            }
        }
    }

    function swapExactTokensForTokens(
        uint256 amountIn,
        uint256 amountOutMin,
        Route[] calldata routes,
        address to,
        uint256 deadline
    ) external returns (uint256[] memory amounts) {
        require(deadline >= block.timestamp, "Router: expired");
        amounts = getAmountsOut(amountIn, routes);
        require(amounts[amounts.length - 1] >= amountOutMin, "Router: insufficient output");
        address first = poolFor(routes[0].from, routes[0].to, routes[0].stable, routes[0].factory);
        require(IERC20Minimal(routes[0].from).transferFrom(msg.sender, first, amountIn), "Router: transferFrom");
        for (uint256 i = 0; i < routes.length; i++) {
            address pool = poolFor(routes[i].from, routes[i].to, routes[i].stable, routes[i].factory);
            address recipient = i + 1 < routes.length
                ? poolFor(routes[i + 1].from, routes[i + 1].to, routes[i + 1].stable, routes[i + 1].factory)
                : to;
            (uint256 amount0Out, uint256 amount1Out) = routes[i].from == AerodromeVolatilePool(pool).token0()
                ? (uint256(0), amounts[i + 1])
                : (amounts[i + 1], uint256(0));
            AerodromeVolatilePool(pool).swap(amount0Out, amount1Out, recipient, "");
        }
    }
}
