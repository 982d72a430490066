import type pg from "pg";
import type { StoredOutcome } from "../stored-outcome.ts";
import {
  type BeginVoucherCall,
  type ChannelConfig,
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
  config: ChannelConfig;
  charged_cumulative: string | null;
  signed_max_claimable: string | null;
  signature: string | null;
  balance: string | null;
  total_claimed: string | null;
  withdraw_requested_at: string | null;
  refund_nonce: string | null;
  onchain_synced_at: string | null;
  last_request_at: string | null;
  busy_owner: string | null;
  busy_until: string;
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
  outcome: StoredOutcome;
  created_at: Date;
}

/** NUMERIC columns read as text: uint128 amounts do not fit a JS number. */
const SELECT_CHANNEL = `SELECT channel_id, network, config, charged_cumulative::text, signed_max_claimable::text,
  signature, balance::text, total_claimed::text, withdraw_requested_at, refund_nonce::text, onchain_synced_at,
  last_request_at, busy_owner, busy_until FROM voucher_channels`;
const SELECT_CHARGE = `SELECT channel_id, signed_max_claimable::text, signature, payload_hash, request_hash, door,
  operation_id, amount::text, cumulative::text, request_id, outcome, created_at FROM voucher_charges`;

const numberOrNull = (value: string | null) => (value === null ? null : Number(value));

const toChannel = (row: ChannelRow): ChannelRecord => ({
  channelId: row.channel_id,
  network: row.network,
  config: row.config,
  chargedCumulativeAmount: row.charged_cumulative,
  signedMaxClaimable: row.signed_max_claimable,
  signature: row.signature,
  onchain:
    row.balance === null
      ? null
      : {
          balance: row.balance,
          totalClaimed: row.total_claimed ?? "0",
          withdrawRequestedAt: Number(row.withdraw_requested_at ?? 0),
          refundNonce: row.refund_nonce ?? "0",
        },
  onchainSyncedAt: numberOrNull(row.onchain_synced_at),
  lastRequestAt: numberOrNull(row.last_request_at),
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
  outcome: row.outcome,
  createdAt: row.created_at.toISOString(),
});

/**
 * Voucher channels on PostgreSQL, shared by every instance. The channel's lease is taken and given back
 * by conditional updates of its row (its row lock orders concurrent attempts); no lock is held across
 * the handler's run.
 */
export class PostgresVoucherChannels implements VoucherChannelStore {
  constructor(private readonly pool: pg.Pool) {}

  private async inTransaction<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    try {
      await client.query("BEGIN");
      try {
        const result = await work(client);
        await client.query("COMMIT");
        return result;
      } catch (error) {
        await client.query("ROLLBACK").catch(() => {});
        throw error;
      }
    } finally {
      client.release();
    }
  }

  async beginCall(start: BeginVoucherCall): Promise<VoucherCallStart> {
    return this.inTransaction(async (client) => {
      await client.query(
        `INSERT INTO voucher_channels (channel_id, network, config, payer, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $5) ON CONFLICT (channel_id) DO NOTHING`,
        [
          start.channelId,
          start.network,
          JSON.stringify(start.config),
          start.config.payer,
          new Date(start.now),
        ],
      );
      // The row lock first: a commit of this voucher by another attempt is then either seen or still to come.
      const { rows } = await client.query<ChannelRow>(`${SELECT_CHANNEL} WHERE channel_id = $1 FOR UPDATE`, [
        start.channelId,
      ]);
      const row = rows[0] as ChannelRow;
      const charged = await client.query<ChargeRow>(
        `${SELECT_CHARGE} WHERE channel_id = $1 AND signed_max_claimable = $2::numeric`,
        [start.channelId, start.signedMaxClaimable],
      );
      if (charged.rows[0]) return { kind: "charged", charge: toCharge(charged.rows[0]) };
      const free =
        row.busy_owner === null || row.busy_owner === start.owner || Number(row.busy_until) <= start.now;
      if (!free) return { kind: "busy", until: Number(row.busy_until) };
      await client.query(
        "UPDATE voucher_channels SET busy_owner = $2, busy_until = $3 WHERE channel_id = $1",
        [start.channelId, start.owner, start.leaseUntil],
      );
      return { kind: "begun", channel: toChannel(row) };
    });
  }

  async takeChannel(
    take: TakeVoucherChannel,
  ): Promise<Exclude<VoucherCallStart, { kind: "charged" }> | undefined> {
    return this.inTransaction(async (client) => {
      const { rows } = await client.query<ChannelRow>(`${SELECT_CHANNEL} WHERE channel_id = $1 FOR UPDATE`, [
        take.channelId,
      ]);
      const row = rows[0];
      if (!row) return undefined;
      const free =
        row.busy_owner === null || row.busy_owner === take.owner || Number(row.busy_until) <= take.now;
      if (!free) return { kind: "busy" as const, until: Number(row.busy_until) };
      await client.query(
        "UPDATE voucher_channels SET busy_owner = $2, busy_until = $3 WHERE channel_id = $1",
        [take.channelId, take.owner, take.leaseUntil],
      );
      return { kind: "begun" as const, channel: toChannel(row) };
    });
  }

  async syncOnchain(
    channelId: string,
    owner: string,
    onchain: OnchainChannelState,
    syncedAt: number,
  ): Promise<boolean> {
    return this.inTransaction(async (client) => {
      const { rows } = await client.query<ChannelRow>(`${SELECT_CHANNEL} WHERE channel_id = $1 FOR UPDATE`, [
        channelId,
      ]);
      const row = rows[0];
      if (!row || row.busy_owner !== owner) return false;
      const charged = maxAmount(row.charged_cumulative ?? "0", onchain.totalClaimed);
      const newer = row.onchain_synced_at === null || Number(row.onchain_synced_at) <= syncedAt;
      await client.query(
        newer
          ? `UPDATE voucher_channels SET charged_cumulative = $2::numeric, balance = $3::numeric,
               total_claimed = $4::numeric, withdraw_requested_at = $5, refund_nonce = $6::numeric,
               onchain_synced_at = $7, updated_at = now() WHERE channel_id = $1`
          : "UPDATE voucher_channels SET charged_cumulative = $2::numeric, updated_at = now() WHERE channel_id = $1",
        newer
          ? [
              channelId,
              charged,
              onchain.balance,
              onchain.totalClaimed,
              onchain.withdrawRequestedAt,
              onchain.refundNonce,
              syncedAt,
            ]
          : [channelId, charged],
      );
      return true;
    });
  }

  async commitCall(owner: string, charge: VoucherCharge, now: number): Promise<boolean> {
    return this.inTransaction(async (client) => {
      const moved = await client.query(
        `UPDATE voucher_channels SET charged_cumulative = $4::numeric, signed_max_claimable = $5::numeric,
           signature = $6, last_request_at = $7, busy_owner = NULL, busy_until = 0, updated_at = $8
         WHERE channel_id = $1 AND busy_owner = $2 AND charged_cumulative = $3::numeric`,
        [
          charge.channelId,
          owner,
          chargedBefore(charge),
          charge.cumulative,
          charge.signedMaxClaimable,
          charge.signature,
          now,
          new Date(now),
        ],
      );
      if (moved.rowCount !== 1) return false;
      await client.query(
        `INSERT INTO voucher_charges (channel_id, signed_max_claimable, signature, payload_hash, request_hash, door,
           operation_id, amount, cumulative, request_id, outcome, created_at)
         VALUES ($1, $2::numeric, $3, $4, $5, $6, $7, $8::numeric, $9::numeric, $10, $11, $12)`,
        [
          charge.channelId,
          charge.signedMaxClaimable,
          charge.signature,
          charge.payloadHash,
          charge.requestHash,
          charge.door,
          charge.operationId,
          charge.amount,
          charge.cumulative,
          charge.requestId,
          JSON.stringify(charge.outcome),
          new Date(now),
        ],
      );
      return true;
    });
  }

  async releaseCall(channelId: string, owner: string): Promise<void> {
    await this.pool.query(
      "UPDATE voucher_channels SET busy_owner = NULL, busy_until = 0 WHERE channel_id = $1 AND busy_owner = $2",
      [channelId, owner],
    );
  }

  async getChannel(channelId: string): Promise<ChannelRecord | undefined> {
    const { rows } = await this.pool.query<ChannelRow>(`${SELECT_CHANNEL} WHERE channel_id = $1`, [
      channelId,
    ]);
    return rows[0] ? toChannel(rows[0]) : undefined;
  }

  async getCharge(channelId: string, signedMaxClaimable: string): Promise<VoucherChargeRecord | undefined> {
    const { rows } = await this.pool.query<ChargeRow>(
      `${SELECT_CHARGE} WHERE channel_id = $1 AND signed_max_claimable = $2::numeric`,
      [channelId, signedMaxClaimable],
    );
    return rows[0] ? toCharge(rows[0]) : undefined;
  }

  async charges(channelId: string): Promise<VoucherChargeRecord[]> {
    const { rows } = await this.pool.query<ChargeRow>(
      `${SELECT_CHARGE} WHERE channel_id = $1 ORDER BY voucher_charges.cumulative`,
      [channelId],
    );
    return rows.map(toCharge);
  }

  async channels(): Promise<ChannelRecord[]> {
    const { rows } = await this.pool.query<ChannelRow>(`${SELECT_CHANNEL} ORDER BY created_at, channel_id`);
    return rows.map(toChannel);
  }
}
