import type Database from "better-sqlite3";
import {
  type BeginVoucherCall,
  type ChannelRecord,
  chargedBefore,
  maxAmount,
  type OnchainChannelState,
  type TakeVoucherChannel,
  type VoucherCallStart,
  type VoucherChannelStore,
  type VoucherCharge,
  type VoucherChargeRecord,
} from "../voucher-channels.ts";

interface ChannelRow {
  channel_id: string;
  network: string;
  config: string;
  charged_cumulative: string | null;
  signed_max_claimable: string | null;
  signature: string | null;
  balance: string | null;
  total_claimed: string | null;
  withdraw_requested_at: number | null;
  refund_nonce: string | null;
  onchain_synced_at: number | null;
  last_request_at: number | null;
  busy_owner: string | null;
  busy_until: number;
}

interface ChargeRow {
  channel_id: string;
  signed_max_claimable: string;
  signature: string;
  payload_hash: string;
  request_hash: string;
  door: string;
  operation_id: string;
  amount: string;
  cumulative: string;
  request_id: string;
  outcome: string;
  created_at: string;
}

const toChannel = (row: ChannelRow): ChannelRecord => ({
  channelId: row.channel_id,
  network: row.network,
  config: JSON.parse(row.config),
  chargedCumulativeAmount: row.charged_cumulative,
  signedMaxClaimable: row.signed_max_claimable,
  signature: row.signature,
  onchain:
    row.balance === null
      ? null
      : {
          balance: row.balance,
          totalClaimed: row.total_claimed ?? "0",
          withdrawRequestedAt: row.withdraw_requested_at ?? 0,
          refundNonce: row.refund_nonce ?? "0",
        },
  onchainSyncedAt: row.onchain_synced_at,
  lastRequestAt: row.last_request_at,
});

const toCharge = (row: ChargeRow): VoucherChargeRecord => ({
  channelId: row.channel_id,
  signedMaxClaimable: row.signed_max_claimable,
  signature: row.signature,
  payloadHash: row.payload_hash,
  requestHash: row.request_hash,
  door: row.door,
  operationId: row.operation_id,
  amount: row.amount,
  cumulative: row.cumulative,
  requestId: row.request_id,
  outcome: JSON.parse(row.outcome),
  createdAt: row.created_at,
});

/**
 * Voucher channels on SQLite. Every change that reads before it writes is one IMMEDIATE transaction, so
 * every process on the file sees the channel's lease one after the other.
 */
export class SqliteVoucherChannels implements VoucherChannelStore {
  private readonly statements;

  constructor(private readonly db: Database.Database) {
    this.statements = {
      insertChannel: db.prepare(
        `INSERT INTO voucher_channels (channel_id, network, config, payer, created_at, updated_at)
         VALUES (@channelId, @network, @config, @payer, @at, @at) ON CONFLICT (channel_id) DO NOTHING`,
      ),
      getChannel: db.prepare("SELECT * FROM voucher_channels WHERE channel_id = ?"),
      takeChannel: db.prepare(
        `UPDATE voucher_channels SET busy_owner = @owner, busy_until = @leaseUntil
         WHERE channel_id = @channelId AND (busy_owner IS NULL OR busy_owner = @owner OR busy_until <= @now)`,
      ),
      getCharge: db.prepare(
        "SELECT * FROM voucher_charges WHERE channel_id = ? AND signed_max_claimable = ?",
      ),
      sync: db.prepare(
        `UPDATE voucher_channels SET balance = @balance, total_claimed = @totalClaimed,
           withdraw_requested_at = @withdrawRequestedAt, refund_nonce = @refundNonce,
           onchain_synced_at = @syncedAt, charged_cumulative = @charged, updated_at = @at
         WHERE channel_id = @channelId`,
      ),
      commit: db.prepare(
        `UPDATE voucher_channels SET charged_cumulative = @cumulative, signed_max_claimable = @signedMaxClaimable,
           signature = @signature, last_request_at = @now, busy_owner = NULL, busy_until = 0, updated_at = @at
         WHERE channel_id = @channelId AND busy_owner = @owner AND charged_cumulative = @before`,
      ),
      insertCharge: db.prepare(
        `INSERT INTO voucher_charges (channel_id, signed_max_claimable, signature, payload_hash, request_hash, door,
           operation_id, amount, cumulative, request_id, outcome, created_at)
         VALUES (@channelId, @signedMaxClaimable, @signature, @payloadHash, @requestHash, @door,
           @operationId, @amount, @cumulative, @requestId, @outcome, @at)`,
      ),
      release: db.prepare(
        "UPDATE voucher_channels SET busy_owner = NULL, busy_until = 0 WHERE channel_id = ? AND busy_owner = ?",
      ),
      charges: db.prepare("SELECT * FROM voucher_charges WHERE channel_id = ? ORDER BY rowid"),
      channels: db.prepare("SELECT * FROM voucher_channels ORDER BY created_at, channel_id"),
    };
  }

  async beginCall(start: BeginVoucherCall): Promise<VoucherCallStart> {
    return this.db
      .transaction((): VoucherCallStart => {
        this.statements.insertChannel.run({
          channelId: start.channelId,
          network: start.network,
          config: JSON.stringify(start.config),
          payer: start.config.payer,
          at: new Date(start.now).toISOString(),
        });
        const charged = this.statements.getCharge.get(start.channelId, start.signedMaxClaimable) as
          | ChargeRow
          | undefined;
        if (charged) return { kind: "charged", charge: toCharge(charged) };
        const taken = this.statements.takeChannel.run({
          channelId: start.channelId,
          owner: start.owner,
          leaseUntil: start.leaseUntil,
          now: start.now,
        });
        const row = this.statements.getChannel.get(start.channelId) as ChannelRow;
        return taken.changes === 1
          ? { kind: "begun", channel: toChannel(row) }
          : { kind: "busy", until: row.busy_until };
      })
      .immediate();
  }

  async takeChannel(
    take: TakeVoucherChannel,
  ): Promise<Exclude<VoucherCallStart, { kind: "charged" }> | undefined> {
    return this.db
      .transaction(() => {
        const taken = this.statements.takeChannel.run(take);
        const row = this.statements.getChannel.get(take.channelId) as ChannelRow | undefined;
        if (!row) return undefined;
        return taken.changes === 1
          ? { kind: "begun" as const, channel: toChannel(row) }
          : { kind: "busy" as const, until: row.busy_until };
      })
      .immediate();
  }

  async syncOnchain(
    channelId: string,
    owner: string,
    onchain: OnchainChannelState,
    syncedAt: number,
  ): Promise<boolean> {
    return this.db
      .transaction((): boolean => {
        const row = this.statements.getChannel.get(channelId) as ChannelRow | undefined;
        if (!row || row.busy_owner !== owner) return false;
        const newer = row.onchain_synced_at === null || row.onchain_synced_at <= syncedAt;
        const mirrored = newer
          ? { ...onchain, syncedAt }
          : { ...(toChannel(row).onchain as OnchainChannelState), syncedAt: row.onchain_synced_at };
        this.statements.sync.run({
          channelId,
          ...mirrored,
          charged: maxAmount(row.charged_cumulative ?? "0", onchain.totalClaimed),
          at: new Date().toISOString(),
        });
        return true;
      })
      .immediate();
  }

  async commitCall(owner: string, charge: VoucherCharge, now: number): Promise<boolean> {
    const at = new Date(now).toISOString();
    return this.db
      .transaction((): boolean => {
        const moved = this.statements.commit.run({
          channelId: charge.channelId,
          owner,
          before: chargedBefore(charge),
          cumulative: charge.cumulative,
          signedMaxClaimable: charge.signedMaxClaimable,
          signature: charge.signature,
          now,
          at,
        });
        if (moved.changes !== 1) return false;
        this.statements.insertCharge.run({ ...charge, outcome: JSON.stringify(charge.outcome), at });
        return true;
      })
      .immediate();
  }

  async releaseCall(channelId: string, owner: string): Promise<void> {
    this.statements.release.run(channelId, owner);
  }

  async getChannel(channelId: string): Promise<ChannelRecord | undefined> {
    const row = this.statements.getChannel.get(channelId) as ChannelRow | undefined;
    return row ? toChannel(row) : undefined;
  }

  async getCharge(channelId: string, signedMaxClaimable: string): Promise<VoucherChargeRecord | undefined> {
    const row = this.statements.getCharge.get(channelId, signedMaxClaimable) as ChargeRow | undefined;
    return row ? toCharge(row) : undefined;
  }

  async charges(channelId: string): Promise<VoucherChargeRecord[]> {
    return (this.statements.charges.all(channelId) as ChargeRow[]).map(toCharge);
  }

  async channels(): Promise<ChannelRecord[]> {
    return (this.statements.channels.all() as ChannelRow[]).map(toChannel);
  }
}
