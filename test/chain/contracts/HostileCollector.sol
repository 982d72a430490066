// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

/// Test only: a deposit collector a caller may name in `deposit`, which either re-enters the
/// settlement contract or delivers nothing, so the escrow's own guards are what stops it.
contract HostileCollector {
    bool public reenter;

    function setReenter(bool value) external {
        reenter = value;
    }

    function collect(address, address, uint256, bytes32, bytes calldata) external {
        if (!reenter) return; // delivers nothing
        // Re-enter with the call the settlement contract is running (its calldata is ours to replay).
        (bool ok, bytes memory result) = msg.sender.call(abi.encodeWithSignature("settle(address,address)", address(this), address(this)));
        if (!ok) {
            assembly ("memory-safe") {
                revert(add(result, 0x20), mload(result))
            }
        }
    }
}
