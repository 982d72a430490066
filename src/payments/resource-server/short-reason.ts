/** The longest reason a 402 carries (its PAYMENT-REQUIRED `error`, the problem's `detail`). */
export const MAX_REASON_LENGTH = 200;

/**
 * One short line from an error message: its first paragraph with the line breaks folded into spaces,
 * at most `max` characters. viem's errors put what happened in that paragraph ("The contract function
 * … reverted with the following reason:" + the revert reason) and then a multi-line dump of the call,
 * its arguments and links: that dump must never reach a header, where it would outgrow a proxy's
 * buffer (nginx's default is 4 KB for all the response headers).
 */
export function shortReason(message: string, max = MAX_REASON_LENGTH): string {
  const paragraph = message.trim().split(/\r?\n\s*\r?\n/)[0] ?? "";
  const line = paragraph.replace(/\s+/g, " ").trim();
  return line.length <= max ? line : `${line.slice(0, max - 1).trimEnd()}…`;
}
