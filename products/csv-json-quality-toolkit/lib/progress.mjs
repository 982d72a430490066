// A progress line on stderr for long runs: rows read, bytes of the file, elapsed time.

const mb = (bytes) => (bytes / 1e6).toFixed(1);
const thousands = (n) => n.toLocaleString("en-US");

/**
 * `tick(bytes, rows)` as reading goes on; a line is written every `intervalMs` once the run has
 * lasted that long (from the start with `always`), and `done(rows)` writes a last line when any
 * was written (or with `always`). `quiet` writes nothing.
 */
export function progressReporter(label, { totalBytes = 0, always = false, quiet = false, intervalMs = 2000, stream = process.stderr } = {}) {
  const start = Date.now();
  let next = start + intervalMs;
  let wrote = false;
  let bytesRead = 0;
  const line = (rows, final) => {
    const elapsed = (Date.now() - start) / 1000;
    const percent = totalBytes > 0 ? ` (${Math.min(100, Math.round((bytesRead / totalBytes) * 100))}%)` : "";
    const rate = elapsed > 0 ? `, ${thousands(Math.round(rows / elapsed))} rows/s` : "";
    stream.write(`${label}: ${thousands(rows)} rows, ${mb(bytesRead)} of ${mb(totalBytes)} MB${percent}, ${elapsed.toFixed(1)} s${rate}${final ? ", done" : ""}\n`);
    wrote = true;
  };
  return {
    tick(bytes, rows) {
      bytesRead = bytes;
      if (quiet) return;
      const now = Date.now();
      if (now >= next) {
        next = now + intervalMs;
        line(rows, false);
      }
    },
    done(rows) {
      if (!quiet && (wrote || always)) line(rows, true);
    },
  };
}
