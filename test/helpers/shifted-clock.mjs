// Preloaded (node --import) into a service a test spawns as its own process, to start that process's
// clock ahead of the machine's by SHIFTED_CLOCK_OFFSET_MS: what would otherwise be a real wait for a
// deadline read from the clock (a payment's lease running out, an authorization's expiry) has then
// already passed when the process starts. Timers are untouched: they still fire after real time.
// Plain JavaScript because it runs before the TypeScript loader is registered.
const offset = Number(process.env.SHIFTED_CLOCK_OFFSET_MS ?? "0");
if (!Number.isSafeInteger(offset) || offset < 0) {
  throw new Error(`SHIFTED_CLOCK_OFFSET_MS must be a whole number of milliseconds ≥ 0, not ${offset}`);
}
if (offset > 0) {
  const RealDate = Date;
  const now = () => RealDate.now() + offset;
  // A function, not a subclass: `Date()` called without `new` must keep answering a string.
  function ShiftedDate(...args) {
    if (!new.target) return new RealDate(now()).toString();
    return args.length === 0 ? new RealDate(now()) : new RealDate(...args);
  }
  Object.setPrototypeOf(ShiftedDate, RealDate);
  ShiftedDate.prototype = RealDate.prototype;
  ShiftedDate.now = now;
  globalThis.Date = ShiftedDate;
}
