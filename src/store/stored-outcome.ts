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
}

/** A release file a paid download streams; its bytes never pass through the store. */
export interface FileBody {
  path: string;
  size: number;
  /** Hex sha256 of the whole file: its ETag. */
  sha256: string;
}
