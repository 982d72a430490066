import pino, { type Logger } from "pino";

let stampedAt = -1;
let stamp = "";

/**
 * pino's ISO-8601 `time`, formatted once per millisecond: under load many lines share a
 * millisecond, and formatting the date was the dearest part of an access log line.
 */
export function isoTimeOncePerMillisecond(): string {
  const now = Date.now();
  if (now !== stampedAt) {
    stampedAt = now;
    stamp = `,"time":"${new Date(now).toISOString()}"`;
  }
  return stamp;
}

export function createLogger(level: string): Logger {
  return pino({
    level,
    base: { service: "utility402" },
    timestamp: isoTimeOncePerMillisecond,
    formatters: { level: (label) => ({ level: label }) },
  });
}
