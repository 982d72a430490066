// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

/// The L1 data fee part of the OP Stack GasPriceOracle predeploy (0x420…000F), with the Bedrock
/// formula: (calldata gas of the transaction + overhead + 68 bytes of signature at 16 gas) ·
/// l1BaseFee · scalar / 10^6. Placed with anvil_setCode; l1BaseFee (slot 0), overhead (slot 1) and
/// scalar (slot 2) are set with anvil_setStorageAt.
contract GasPriceOracleStandIn {
    uint256 public l1BaseFee;
    uint256 public overhead;
    uint256 public scalar;
    uint256 public constant decimals = 6;

    function getL1GasUsed(bytes memory data) public view returns (uint256) {
        uint256 total = 0;
        for (uint256 i = 0; i < data.length; i++) {
            total += data[i] == 0 ? 4 : 16;
        }
        return total + overhead + 68 * 16;
    }

    function getL1Fee(bytes memory data) external view returns (uint256) {
        return (getL1GasUsed(data) * l1BaseFee * scalar) / (10 ** decimals);
    }
}
