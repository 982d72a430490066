// A lock file beside the ledger, so that concurrent calls in one process and several processes
// sharing one ledger decide and reserve one at a time. No dependencies.
//
// The lock is `<ledger>.lock`, created with O_CREAT|O_EXCL ("wx"): exactly one creator wins. It
// holds { pid, host, token, at }. A holder keeps it for milliseconds (the work inside is
// synchronous) and removes it only while it still holds its own token.
// Stale: on this host, only when its process is gone (a live holder is never broken, however old
// its lock); from another host (a shared disk), when it is older than `staleMs`, which must be
// shorter than `timeoutMs` so that a waiter outlives a crashed holder.
// Breaking a stale lock is itself done under a second lock, `<ledger>.lock.break` (created with
// "wx", held for microseconds): only its holder may remove the lock file, and only after reading
// again, under it, the token it judged stale. No one else removes a lock it does not hold, so the
// token read is still the file's when it is removed.
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import { LedgerError } from "./ledger.mjs";

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
  } catch (error) {
    if (error.code === "EISDIR") throw notALockFile(file);
    return undefined; // gone, or being written this instant
  }
}

const notALockFile = (file) => new LedgerError(`the ledger lock ${file} is not a file (a directory?); remove it before paying again`);

function ageMs(file) {
  try {
    return Date.now() - fs.statSync(file).mtimeMs;
  } catch {
    return 0;
  }
}

function isStale(holder, file, staleMs) {
  if (holder && holder.host === os.hostname() && Number.isInteger(holder.pid)) return !alive(holder.pid);
  // Unreadable (its creator writes right after creating it) or another host's: by age.
  return ageMs(file) > staleMs;
}

function breakStale(file, holder, staleMs) {
  const breaker = `${file}.break`;
  let fd;
  try {
    fd = fs.openSync(breaker, "wx");
  } catch (error) {
    if (error.code !== "EEXIST") throw error;
    // A breaker holds it for microseconds: one this old crashed while holding it.
    if (ageMs(breaker) > staleMs) fs.rmSync(breaker, { force: true });
    return;
  }
  try {
    const now = readLock(file);
    if (now?.token === holder?.token && isStale(now, file, staleMs)) fs.rmSync(file, { force: true });
  } finally {
    fs.closeSync(fd);
    fs.rmSync(breaker, { force: true });
  }
}

function tryAcquire(file, staleMs) {
  const token = randomBytes(12).toString("hex");
  let fd;
  try {
    fd = fs.openSync(file, "wx");
  } catch (error) {
    if (error.code === "ENOENT" || error.code === "ENOTDIR") throw new LedgerError(`the ledger's directory does not exist (${file}); create it before paying`);
    if (error.code === "EACCES" || error.code === "EPERM" || error.code === "EROFS") throw new LedgerError(`the ledger lock ${file} cannot be created (${error.code})`);
    if (error.code !== "EEXIST") throw error;
    const stat = fs.lstatSync(file, { throwIfNoEntry: false });
    if (stat && !stat.isFile()) throw notALockFile(file);
    const holder = readLock(file);
    if (isStale(holder, file, staleMs)) breakStale(file, holder, staleMs);
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
export async function withLedgerLock(ledgerPath, work, { timeoutMs = 10_000, staleMs = Math.min(5_000, timeoutMs / 2) } = {}) {
  if (!(staleMs < timeoutMs)) throw new RangeError(`lock: staleMs (${staleMs}) must be shorter than timeoutMs (${timeoutMs})`);
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
    if (Date.now() > deadline) {
      const holder = readLock(file);
      const who = holder?.pid ? ` (pid ${holder.pid} on ${holder.host})` : "";
      throw new LockTimeout(`the ledger lock ${file} is held by another process${who} (waited ${timeoutMs} ms; remove the file if that process no longer uses the ledger)`);
    }
    await sleep(2 + Math.floor(Math.random() * 8));
  }
}
