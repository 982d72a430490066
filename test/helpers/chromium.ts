import { type BrowserContext, chromium } from "playwright-core";
import { requireTool } from "./requires.ts";

/** Debian's Chromium, the browser the browser tests drive (CI installs it: .ci/run). */
export const CHROMIUM = "/usr/bin/chromium";
export const chromiumInstalled = requireTool("chromium", CHROMIUM, "apt-get install chromium (Debian's)");

/**
 * Headless Chromium with a fresh profile in `profileDir`, driven by playwright-core over the DevTools
 * protocol, with nothing of its own on the network (no background fetches, updates, sync or QUIC).
 */
export function launchChromium(profileDir: string): Promise<BrowserContext> {
  return chromium.launchPersistentContext(profileDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}
