// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

/// A price feed with Chainlink's AggregatorV3Interface; the owner posts answers (local chain only).
contract ChainlinkFeedStandIn {
    uint8 public immutable decimals;
    string public description;
    uint256 public constant version = 4;
    address public immutable owner;

    uint80 private roundId;
    int256 private answer;
    uint256 private updatedAt;

    constructor(uint8 _decimals, string memory _description, int256 _answer) {
        decimals = _decimals;
        description = _description;
        owner = msg.sender;
        _post(_answer, block.timestamp);
    }

    /// Posts an answer as of `timestamp` (a past time makes the feed stale on purpose).
    function postAnswer(int256 _answer, uint256 timestamp) external {
        require(msg.sender == owner, "Feed: owner");
        require(timestamp <= block.timestamp, "Feed: future");
        _post(_answer, timestamp);
    }

    function latestRoundData() external view returns (uint80, int256, uint256, uint256, uint80) {
        return (roundId, answer, updatedAt, updatedAt, roundId);
    }

    function latestAnswer() external view returns (int256) {
        return answer;
    }

    function _post(int256 _answer, uint256 timestamp) private {
        roundId += 1;
        answer = _answer;
        updatedAt = timestamp;
    }
}
