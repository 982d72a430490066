// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {IERC20Minimal} from "./IERC20Minimal.sol";

/// The channel config of the x402 `batch-settlement` scheme; its EIP-712 hash is the channel id.
struct ChannelConfig {
    address payer;
    address payerAuthorizer;
    address receiver;
    address receiverAuthorizer;
    address token;
    uint40 withdrawDelay;
    bytes32 salt;
}

struct Voucher {
    ChannelConfig channel;
    uint128 maxClaimableAmount;
}

/// One row of a claim: the payer's voucher, its signature, and the cumulative total to claim up to.
struct VoucherClaim {
    Voucher voucher;
    bytes signature;
    uint128 totalClaimed;
}

/// Pulls a deposit's tokens from the payer into the settlement contract, for one channel.
interface IDepositCollector {
    function collect(address payer, address token, uint256 amount, bytes32 channelId, bytes calldata data)
        external;
}

interface IERC1271 {
    function isValidSignature(bytes32 digest, bytes calldata signature) external view returns (bytes4);
}

/// Signature checks for EOAs (ECDSA, low-s only) and contract wallets (EIP-1271).
library Signatures {
    /// secp256k1n / 2: a larger s is the malleable twin of a valid signature.
    uint256 private constant HALF_ORDER = 0x7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0;

    /// The ECDSA signer of a 65-byte (r, s, v) signature, or address(0) when it is malformed.
    function recover(bytes32 digest, bytes memory signature) internal pure returns (address) {
        if (signature.length != 65) return address(0);
        bytes32 r;
        bytes32 s;
        uint8 v;
        assembly ("memory-safe") {
            r := mload(add(signature, 0x20))
            s := mload(add(signature, 0x40))
            v := byte(0, mload(add(signature, 0x60)))
        }
        if (uint256(s) > HALF_ORDER) return address(0);
        if (v < 27) v += 27;
        if (v != 27 && v != 28) return address(0);
        return ecrecover(digest, v, r, s);
    }

    /// Whether `signer` signed `digest`: EIP-1271 when it is a contract, ECDSA otherwise.
    function isValidNow(address signer, bytes32 digest, bytes memory signature) internal view returns (bool) {
        if (signer == address(0)) return false;
        if (signer.code.length > 0) {
            (bool ok, bytes memory result) =
                signer.staticcall(abi.encodeCall(IERC1271.isValidSignature, (digest, signature)));
            return ok && result.length >= 32 && abi.decode(result, (bytes32)) == bytes32(IERC1271.isValidSignature.selector);
        }
        return recover(digest, signature) == signer;
    }
}

/**
 * Escrow of the x402 `batch-settlement` scheme on EVM: payers deposit into channels once, sign
 * cumulative vouchers off-chain, and the receiver claims many vouchers (many channels) in one
 * transaction and sweeps the claimed funds with `settle`. Written from the scheme's specification
 * (coinbase/x402 specs/schemes/batch-settlement/scheme_batch_settlement_evm.md) and the interface the
 * official x402 EVM client and facilitator (npm package x402/evm, 2.27) call.
 *
 * Accounting per channel: `balance` = deposits − refunds − withdrawals (claimed funds stay in it),
 * `totalClaimed` only grows, and `balance − totalClaimed` is the unclaimed escrow a payer can get back.
 * Per receiver and token: `totalClaimed − totalSettled` is claimed but not yet paid out.
 *
 * The EIP-712 domain separator is computed from `block.chainid` and `address(this)` on every use (no
 * immutables), so the runtime placed at the canonical address behaves as if deployed there.
 */
contract x402BatchSettlement {
    struct Channel {
        uint128 balance;
        uint128 totalClaimed;
    }

    struct PendingWithdrawal {
        uint128 amount;
        uint40 initiatedAt;
    }

    struct ReceiverTotals {
        uint128 totalClaimed;
        uint128 totalSettled;
    }

    uint40 public constant MIN_WITHDRAW_DELAY = 15 minutes;
    uint40 public constant MAX_WITHDRAW_DELAY = 30 days;

    bytes32 public constant CHANNEL_CONFIG_TYPEHASH = keccak256(
        "ChannelConfig(address payer,address payerAuthorizer,address receiver,address receiverAuthorizer,address token,uint40 withdrawDelay,bytes32 salt)"
    );
    bytes32 public constant VOUCHER_TYPEHASH = keccak256("Voucher(bytes32 channelId,uint128 maxClaimableAmount)");
    bytes32 public constant REFUND_TYPEHASH = keccak256("Refund(bytes32 channelId,uint256 nonce,uint128 amount)");
    bytes32 public constant CLAIM_ENTRY_TYPEHASH =
        keccak256("ClaimEntry(bytes32 channelId,uint128 maxClaimableAmount,uint128 totalClaimed)");
    bytes32 public constant CLAIM_BATCH_TYPEHASH = keccak256(
        "ClaimBatch(ClaimEntry[] claims)ClaimEntry(bytes32 channelId,uint128 maxClaimableAmount,uint128 totalClaimed)"
    );
    bytes32 private constant DOMAIN_TYPEHASH =
        keccak256("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)");
    bytes32 private constant NAME_HASH = keccak256("x402 Batch Settlement");
    bytes32 private constant VERSION_HASH = keccak256("1");

    /// EIP-1153 slot of the reentrancy lock (transient: cleared at the end of every transaction).
    bytes32 private constant LOCK_SLOT = keccak256("x402BatchSettlement.lock");

    mapping(bytes32 channelId => Channel) public channels;
    mapping(bytes32 channelId => PendingWithdrawal) public pendingWithdrawals;
    mapping(bytes32 channelId => uint256) public refundNonce;
    mapping(address receiver => mapping(address token => ReceiverTotals)) public receivers;

    event ChannelCreated(bytes32 indexed channelId, ChannelConfig config);
    event ChannelClosed(bytes32 indexed channelId, ChannelConfig config);
    event Deposited(
        bytes32 indexed channelId, address indexed sender, address indexed collector, uint128 amount, uint128 balance
    );
    event Claimed(bytes32 indexed channelId, address indexed sender, uint128 amount, uint128 totalClaimed);
    event Settled(address indexed receiver, address indexed token, address indexed sender, uint128 amount);
    event Refunded(bytes32 indexed channelId, address indexed sender, uint256 nonce, uint128 amount);
    event WithdrawInitiated(bytes32 indexed channelId, address indexed sender, uint128 amount, uint40 finalizableAt);
    event WithdrawReduced(bytes32 indexed channelId, uint128 amount);
    event WithdrawCancelled(bytes32 indexed channelId);
    event WithdrawFinalized(bytes32 indexed channelId, address indexed sender, uint128 amount);

    error Reentrancy();
    error ZeroAmount();
    error ZeroAddress();
    error WithdrawDelayOutOfRange(uint40 withdrawDelay);
    error AmountOverflow();
    error DepositAmountMismatch(uint256 expected, uint256 received);
    error NotReceiverOrAuthorizer(bytes32 channelId, address sender);
    error NotPayerOrAuthorizer(bytes32 channelId, address sender);
    error InvalidVoucherSignature(bytes32 channelId);
    error InvalidAuthorizerSignature();
    error ReceiverAuthorizerMismatch(bytes32 channelId);
    error EmptyClaims();
    error ClaimExceedsVoucher(bytes32 channelId, uint128 totalClaimed, uint128 maxClaimableAmount);
    error ClaimExceedsBalance(bytes32 channelId, uint128 totalClaimed, uint128 balance);
    error ClaimBelowClaimed(bytes32 channelId, uint128 totalClaimed, uint128 alreadyClaimed);
    error InvalidRefundNonce(bytes32 channelId, uint256 expected, uint256 given);
    error WithdrawExceedsAvailable(bytes32 channelId, uint128 amount, uint128 available);
    error WithdrawAlreadyPending(bytes32 channelId);
    error NoPendingWithdrawal(bytes32 channelId);
    error WithdrawDelayNotElapsed(bytes32 channelId, uint256 finalizableAt);
    error TransferFailed();

    modifier nonReentrant() {
        bytes32 slot = LOCK_SLOT;
        uint256 locked;
        assembly ("memory-safe") {
            locked := tload(slot)
        }
        if (locked != 0) revert Reentrancy();
        assembly ("memory-safe") {
            tstore(slot, 1)
        }
        _;
        assembly ("memory-safe") {
            tstore(slot, 0)
        }
    }

    // ----- deposits -----

    /// Deposits `amount` of the channel's token from its payer through `collector` (which checks the
    /// payer's authorization); the first deposit creates the channel. Anyone may submit (gas sponsoring).
    function deposit(ChannelConfig calldata config, uint128 amount, address collector, bytes calldata collectorData)
        external
        nonReentrant
    {
        if (amount == 0) revert ZeroAmount();
        _checkConfig(config);
        bytes32 channelId = getChannelId(config);
        IERC20Minimal token = IERC20Minimal(config.token);
        uint256 before = token.balanceOf(address(this));
        IDepositCollector(collector).collect(config.payer, config.token, amount, channelId, collectorData);
        uint256 received = token.balanceOf(address(this)) - before;
        if (received != amount) revert DepositAmountMismatch(amount, received);

        Channel storage channel = channels[channelId];
        uint128 previous = channel.balance;
        if (uint256(previous) + amount > type(uint128).max) revert AmountOverflow();
        channel.balance = previous + amount;
        if (previous == 0) emit ChannelCreated(channelId, config);
        emit Deposited(channelId, msg.sender, collector, amount, channel.balance);
    }

    // ----- claims and settlement -----

    /// Claims vouchers of many channels; the caller must be each row's receiver or receiver authorizer.
    function claim(VoucherClaim[] calldata voucherClaims) external nonReentrant {
        if (voucherClaims.length == 0) revert EmptyClaims();
        for (uint256 i = 0; i < voucherClaims.length; i++) {
            ChannelConfig calldata config = voucherClaims[i].voucher.channel;
            if (msg.sender != config.receiver && msg.sender != config.receiverAuthorizer) {
                revert NotReceiverOrAuthorizer(getChannelId(config), msg.sender);
            }
            _claim(voucherClaims[i]);
        }
    }

    /// Claims vouchers of many channels on a `ClaimBatch` signature of their common receiver
    /// authorizer; anyone may relay it.
    function claimWithSignature(VoucherClaim[] calldata voucherClaims, bytes calldata authorizerSignature)
        external
        nonReentrant
    {
        if (voucherClaims.length == 0) revert EmptyClaims();
        address authorizer = voucherClaims[0].voucher.channel.receiverAuthorizer;
        for (uint256 i = 1; i < voucherClaims.length; i++) {
            ChannelConfig calldata config = voucherClaims[i].voucher.channel;
            if (config.receiverAuthorizer != authorizer) revert ReceiverAuthorizerMismatch(getChannelId(config));
        }
        if (!Signatures.isValidNow(authorizer, getClaimBatchDigest(voucherClaims), authorizerSignature)) {
            revert InvalidAuthorizerSignature();
        }
        for (uint256 i = 0; i < voucherClaims.length; i++) {
            _claim(voucherClaims[i]);
        }
    }

    /// Pays out everything claimed and not yet settled for `receiver` in `token`. Permissionless:
    /// the funds can only go to the receiver.
    function settle(address receiver, address token) external nonReentrant {
        ReceiverTotals storage totals = receivers[receiver][token];
        uint128 amount = totals.totalClaimed - totals.totalSettled;
        if (amount == 0) return;
        totals.totalSettled = totals.totalClaimed;
        _transfer(token, receiver, amount);
        emit Settled(receiver, token, msg.sender, amount);
    }

    // ----- refunds and withdrawals -----

    /// Cooperative refund by the channel's receiver or receiver authorizer: returns up to `amount` of
    /// the unclaimed escrow to the payer.
    function refund(ChannelConfig calldata config, uint128 amount) external nonReentrant {
        bytes32 channelId = getChannelId(config);
        if (msg.sender != config.receiver && msg.sender != config.receiverAuthorizer) {
            revert NotReceiverOrAuthorizer(channelId, msg.sender);
        }
        _refund(config, channelId, amount);
    }

    /// Cooperative refund on the receiver authorizer's `Refund` signature for the current nonce;
    /// anyone may relay it, once.
    function refundWithSignature(
        ChannelConfig calldata config,
        uint128 amount,
        uint256 nonce,
        bytes calldata receiverAuthorizerSignature
    ) external nonReentrant {
        bytes32 channelId = getChannelId(config);
        uint256 expected = refundNonce[channelId];
        if (nonce != expected) revert InvalidRefundNonce(channelId, expected, nonce);
        if (
            !Signatures.isValidNow(
                config.receiverAuthorizer, getRefundDigest(channelId, nonce, amount), receiverAuthorizerSignature
            )
        ) revert InvalidAuthorizerSignature();
        _refund(config, channelId, amount);
    }

    /// Starts a timed withdrawal of up to the unclaimed escrow (the payer's escape hatch); the
    /// receiver can still claim vouchers until `withdrawDelay` has passed.
    function initiateWithdraw(ChannelConfig calldata config, uint128 amount) external nonReentrant {
        bytes32 channelId = _onlyPayer(config);
        if (amount == 0) revert ZeroAmount();
        if (pendingWithdrawals[channelId].initiatedAt != 0) revert WithdrawAlreadyPending(channelId);
        Channel storage channel = channels[channelId];
        uint128 available = channel.balance - channel.totalClaimed;
        if (amount > available) revert WithdrawExceedsAvailable(channelId, amount, available);
        pendingWithdrawals[channelId] = PendingWithdrawal(amount, uint40(block.timestamp));
        emit WithdrawInitiated(channelId, msg.sender, amount, uint40(block.timestamp) + config.withdrawDelay);
    }

    /// Completes a timed withdrawal once its delay has passed, capped at the escrow still unclaimed.
    function finalizeWithdraw(ChannelConfig calldata config) external nonReentrant {
        bytes32 channelId = _onlyPayer(config);
        PendingWithdrawal memory pending = pendingWithdrawals[channelId];
        if (pending.initiatedAt == 0) revert NoPendingWithdrawal(channelId);
        uint256 finalizableAt = uint256(pending.initiatedAt) + config.withdrawDelay;
        if (block.timestamp < finalizableAt) revert WithdrawDelayNotElapsed(channelId, finalizableAt);
        delete pendingWithdrawals[channelId];
        Channel storage channel = channels[channelId];
        uint128 available = channel.balance - channel.totalClaimed;
        uint128 amount = pending.amount < available ? pending.amount : available;
        channel.balance -= amount;
        if (amount > 0) _transfer(config.token, config.payer, amount);
        emit WithdrawFinalized(channelId, msg.sender, amount);
        if (channel.balance == 0 && amount > 0) emit ChannelClosed(channelId, config);
    }

    // ----- batching -----

    /// Runs several calls of this contract in one transaction (e.g. a claim and then a refund); any
    /// failure reverts them all with the failing call's revert data.
    function multicall(bytes[] calldata data) external returns (bytes[] memory results) {
        results = new bytes[](data.length);
        for (uint256 i = 0; i < data.length; i++) {
            (bool ok, bytes memory result) = address(this).delegatecall(data[i]);
            if (!ok) {
                assembly ("memory-safe") {
                    revert(add(result, 0x20), mload(result))
                }
            }
            results[i] = result;
        }
    }

    // ----- EIP-712 -----

    function domainSeparator() public view returns (bytes32) {
        return keccak256(abi.encode(DOMAIN_TYPEHASH, NAME_HASH, VERSION_HASH, block.chainid, address(this)));
    }

    /// ERC-5267: lets wallets and tools discover the signing domain.
    function eip712Domain()
        external
        view
        returns (bytes1, string memory, string memory, uint256, address, bytes32, uint256[] memory)
    {
        return (hex"0f", "x402 Batch Settlement", "1", block.chainid, address(this), bytes32(0), new uint256[](0));
    }

    function getChannelId(ChannelConfig calldata config) public view returns (bytes32) {
        return _hashTyped(
            keccak256(
                abi.encode(
                    CHANNEL_CONFIG_TYPEHASH,
                    config.payer,
                    config.payerAuthorizer,
                    config.receiver,
                    config.receiverAuthorizer,
                    config.token,
                    config.withdrawDelay,
                    config.salt
                )
            )
        );
    }

    function getVoucherDigest(bytes32 channelId, uint128 maxClaimableAmount) public view returns (bytes32) {
        return _hashTyped(keccak256(abi.encode(VOUCHER_TYPEHASH, channelId, maxClaimableAmount)));
    }

    function getRefundDigest(bytes32 channelId, uint256 nonce, uint128 amount) public view returns (bytes32) {
        return _hashTyped(keccak256(abi.encode(REFUND_TYPEHASH, channelId, nonce, amount)));
    }

    function getClaimBatchDigest(VoucherClaim[] calldata voucherClaims) public view returns (bytes32) {
        bytes32[] memory entries = new bytes32[](voucherClaims.length);
        for (uint256 i = 0; i < voucherClaims.length; i++) {
            entries[i] = keccak256(
                abi.encode(
                    CLAIM_ENTRY_TYPEHASH,
                    getChannelId(voucherClaims[i].voucher.channel),
                    voucherClaims[i].voucher.maxClaimableAmount,
                    voucherClaims[i].totalClaimed
                )
            );
        }
        return _hashTyped(keccak256(abi.encode(CLAIM_BATCH_TYPEHASH, keccak256(abi.encodePacked(entries)))));
    }

    // ----- internals -----

    function _hashTyped(bytes32 structHash) private view returns (bytes32) {
        return keccak256(abi.encodePacked(hex"1901", domainSeparator(), structHash));
    }

    function _checkConfig(ChannelConfig calldata config) private pure {
        if (
            config.payer == address(0) || config.receiver == address(0) || config.receiverAuthorizer == address(0)
                || config.token == address(0)
        ) revert ZeroAddress();
        if (config.withdrawDelay < MIN_WITHDRAW_DELAY || config.withdrawDelay > MAX_WITHDRAW_DELAY) {
            revert WithdrawDelayOutOfRange(config.withdrawDelay);
        }
    }

    function _onlyPayer(ChannelConfig calldata config) private view returns (bytes32 channelId) {
        channelId = getChannelId(config);
        bool authorized = msg.sender == config.payer
            || (config.payerAuthorizer != address(0) && msg.sender == config.payerAuthorizer);
        if (!authorized) revert NotPayerOrAuthorizer(channelId, msg.sender);
    }

    /// Raises a channel's `totalClaimed` to the row's total, within its voucher and its balance. A row
    /// at the total already claimed is a no-op (a refund's zero-charge voucher, a replayed batch).
    function _claim(VoucherClaim calldata row) private {
        ChannelConfig calldata config = row.voucher.channel;
        bytes32 channelId = getChannelId(config);
        uint128 maxClaimable = row.voucher.maxClaimableAmount;
        uint128 total = row.totalClaimed;
        address signer = config.payerAuthorizer;
        bytes32 digest = getVoucherDigest(channelId, maxClaimable);
        // A committed payer authorizer is an EOA key (ECDSA only); without one the payer signs,
        // which may be a contract wallet (EIP-1271).
        bool validVoucher = signer != address(0)
            ? Signatures.recover(digest, row.signature) == signer
            : Signatures.isValidNow(config.payer, digest, row.signature);
        if (!validVoucher) revert InvalidVoucherSignature(channelId);
        if (total > maxClaimable) revert ClaimExceedsVoucher(channelId, total, maxClaimable);
        Channel storage channel = channels[channelId];
        if (total > channel.balance) revert ClaimExceedsBalance(channelId, total, channel.balance);
        uint128 already = channel.totalClaimed;
        if (total < already) revert ClaimBelowClaimed(channelId, total, already);
        if (total == already) return;
        uint128 delta = total - already;
        channel.totalClaimed = total;
        receivers[config.receiver][config.token].totalClaimed += delta;
        emit Claimed(channelId, msg.sender, delta, total);
    }

    /// The nonce advances first, so any refund (even one that moves nothing) voids signatures made
    /// for the previous nonce. A pending withdrawal shrinks by what was refunded, or is cancelled.
    function _refund(ChannelConfig calldata config, bytes32 channelId, uint128 amount) private {
        if (amount == 0) revert ZeroAmount();
        uint256 nonce = refundNonce[channelId]++;
        Channel storage channel = channels[channelId];
        uint128 available = channel.balance - channel.totalClaimed;
        uint128 refunded = amount < available ? amount : available;
        if (refunded == 0) return;
        channel.balance -= refunded;
        PendingWithdrawal storage pending = pendingWithdrawals[channelId];
        if (pending.initiatedAt != 0) {
            if (refunded >= pending.amount) {
                delete pendingWithdrawals[channelId];
                emit WithdrawCancelled(channelId);
            } else {
                pending.amount -= refunded;
                emit WithdrawReduced(channelId, pending.amount);
            }
        }
        _transfer(config.token, config.payer, refunded);
        emit Refunded(channelId, msg.sender, nonce, refunded);
        if (channel.balance == 0) emit ChannelClosed(channelId, config);
    }

    function _transfer(address token, address to, uint256 amount) private {
        (bool ok, bytes memory result) = token.call(abi.encodeCall(IERC20Minimal.transfer, (to, amount)));
        if (!ok || (result.length > 0 && !abi.decode(result, (bool)))) revert TransferFailed();
    }
}
