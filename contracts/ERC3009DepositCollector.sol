// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {IERC20Minimal} from "./IERC20Minimal.sol";
import {IDepositCollector} from "./x402BatchSettlement.sol";

/// ERC-3009 (USDC v2.2): the bytes-signature form, which also takes EIP-1271 wallets' signatures.
interface IERC3009 {
    function receiveWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        bytes memory signature
    ) external;
}

/**
 * The `eip3009` deposit method of the x402 `batch-settlement` scheme: the payer signs a
 * `ReceiveWithAuthorization` to this collector whose nonce is keccak256(abi.encode(channelId, salt)),
 * so the authorization can fund that one channel and nothing else. Only the settlement contract may
 * call it (during its `deposit`); the tokens go straight on to the settlement contract.
 *
 * `collectorData` = abi.encode(uint256 validAfter, uint256 validBefore, uint256 salt, bytes signature).
 */
contract ERC3009DepositCollector is IDepositCollector {
    address public immutable settlement;

    error OnlySettlement(address sender);
    error TransferFailed();

    constructor(address settlement_) {
        settlement = settlement_;
    }

    function collect(address payer, address token, uint256 amount, bytes32 channelId, bytes calldata data)
        external
    {
        if (msg.sender != settlement) revert OnlySettlement(msg.sender);
        (uint256 validAfter, uint256 validBefore, uint256 salt, bytes memory signature) =
            abi.decode(data, (uint256, uint256, uint256, bytes));
        bytes32 nonce = keccak256(abi.encode(channelId, salt));
        IERC3009(token).receiveWithAuthorization(payer, address(this), amount, validAfter, validBefore, nonce, signature);
        (bool ok, bytes memory result) = token.call(abi.encodeCall(IERC20Minimal.transfer, (settlement, amount)));
        if (!ok || (result.length > 0 && !abi.decode(result, (bool)))) revert TransferFailed();
    }
}
