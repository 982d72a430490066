import type { FileBody } from "../contract/operation.ts";

/** The answers the store keeps: a leaf, so that every part of the store may name them. */

/** The response a payment produced, kept so a retry of the same payment gets the same answer. */
export interface StoredOutcome {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** A download: the body is this file, streamed from disk when the outcome is sent (body is then ""). */
  file?: FileBody;
  /** A sold download's first caller (sha256 of its address): its own prompt retry needs no download token. */
  firstCaller?: string;
  /**
   * Made final with no client to answer (the recovery sweeper decided it): the client was last told to
   * retry, so the outcome is replayed to the same payment and request whenever it comes back, and its
   * replay window starts only at that first delivery (`deliveredAt`).
   */
  awaitingClient?: true;
  /** Epoch ms of the first delivery of an outcome that was awaiting its client. */
  deliveredAt?: number;
}
