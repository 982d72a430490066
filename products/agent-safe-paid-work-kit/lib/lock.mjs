// A lock file beside the ledger, so that concurrent calls in one process and several processes
// sharing one ledger decide and reserve one at a time. No dependencies.
//
// The lock is `<ledger>.lock`, created with O_CREAT|O_EXCL ("wx"): exactly one creator wins. It
// holds { pid, host, token, at }. A lock is stale when its process is gone (same host) or it is
// older than `staleMs` (a holder keeps it for milliseconds: the work inside is synchronous).
// A stale lock is moved aside under a unique name, checked to be the one judged stale, and removed.
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";

export class LockTimeout extends Error {}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === "EPERM";
  }
}

function readLock(file) {
  try {
    return JSON.parse(fs.readFileSync(file, "utf8"));
  } catch {
    return undefined; // gone, or being written this instant
  }
}

function isStale(holder, file, staleMs) {
  if (!holder) {
    // Unreadable: judge by age only (a creator writes its line right after creating the file).
    try {
      return Date.now() - fs.statSync(file).mtimeMs > staleMs;
    } catch {
      return false;
    }
  }
  if (holder.host === os.hostname() && Number.isInteger(holder.pid) && !alive(holder.pid)) return true;
  return Date.now() - Date.parse(holder.at) > staleMs;
}

function breakStale(file, holder) {
  const aside = `${file}.${randomBytes(6).toString("hex")}.stale`;
  try {
    fs.renameSync(file, aside);
  } catch {
    return; // someone else moved or released it
  }
  const moved = readLock(aside);
  if (holder && moved && moved.token !== holder.token) {
    // Between our look and our move another waiter took the lock: put it back.
    try {
      fs.linkSync(aside, file);
    } catch {}
  }
  fs.rmSync(aside, { force: true });
}

function tryAcquire(file, staleMs) {
  const token = randomBytes(12).toString("hex");
  let fd;
  try {
    fd = fs.openSync(file, "wx");
  } catch (error) {
    if (error.code !== "EEXIST") throw error;
    const holder = readLock(file);
    if (isStale(holder, file, staleMs)) breakStale(file, holder);
    return undefined;
  }
  try {
    fs.writeSync(fd, JSON.stringify({ pid: process.pid, host: os.hostname(), token, at: new Date().toISOString() }));
  } finally {
    fs.closeSync(fd);
  }
  return token;
}

function release(file, token) {
  if (readLock(file)?.token === token) fs.rmSync(file, { force: true });
}

/**
 * Runs `work()` (synchronous: nothing else of this process runs inside it) while holding the lock
 * of `ledgerPath`; waits for it up to `timeoutMs`, then throws LockTimeout (fail closed: nothing is
 * reserved, nothing signed).
 */
export async function withLedgerLock(ledgerPath, work, { timeoutMs = 10_000, staleMs = 30_000 } = {}) {
  const file = `${ledgerPath}.lock`;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const token = tryAcquire(file, staleMs);
    if (token) {
      try {
        return work();
      } finally {
        release(file, token);
      }
    }
    if (Date.now() > deadline) throw new LockTimeout(`the ledger lock ${file} is held by another process (waited ${timeoutMs} ms)`);
    await sleep(2 + Math.floor(Math.random() * 8));
  }
}
