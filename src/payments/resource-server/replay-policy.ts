/** How long after a payment became final its outcome is replayed to the same payment and request. */
export const REPLAY_WINDOW_MS = 120_000;
/**
 * A sold download may be resumed (Range) with the same payment for an hour: a large file on a slow or
 * broken link takes more than two minutes. A resume must carry the download token its first answer gave
 * (DOWNLOAD_TOKEN_HEADER), except the first caller's own prompt retry: the payment itself is public on
 * chain once settled, and must not let anyone who reads the chain download the product.
 */
export const PRODUCT_REPLAY_WINDOW_MS = 3600_000;

export interface ReplayFacts {
  /** A sold download (a product whose payment settled) keeps its outcome longer, behind its token. */
  soldDownload: boolean;
  /** Milliseconds since the payment became final. */
  ageMs: number;
  /** The download token of the first answer, if it gave one. */
  token: string | undefined;
  /** Whether the request presented that very token. */
  tokenPresented: boolean;
  /** Whether the request comes from the client the first answer went to (as far as it can be told). */
  firstCaller: boolean;
}

/** What a repeat of a final payment gets: its outcome, or a 409 saying why not. */
export type ReplayVerdict = "serve" | "expired" | "needs-token";

/**
 * The replay rule. The signed payload is public once settled (the transaction's calldata holds it), so
 * an outcome is replayed only to the client's own prompt retries (two minutes), and a sold download,
 * resumable for an hour, only to whoever holds its download token or, within those two minutes, to
 * the client its first answer went to.
 */
export function replayVerdict(facts: ReplayFacts): ReplayVerdict {
  const window = facts.soldDownload ? PRODUCT_REPLAY_WINDOW_MS : REPLAY_WINDOW_MS;
  if (facts.ageMs > window) return "expired";
  if (facts.token === undefined) return facts.ageMs > REPLAY_WINDOW_MS ? "expired" : "serve";
  if (facts.tokenPresented) return "serve";
  return facts.ageMs <= REPLAY_WINDOW_MS && facts.firstCaller ? "serve" : "needs-token";
}
