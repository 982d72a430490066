/**
 * `utility402 serve` with a CPU profiler that the bench switches on and off over the IPC channel,
 * so the profile covers one load run and not the start-up. Messages: { type: "profile-start" }
 * → "profile-started"; { type: "profile-stop", path } → writes a .cpuprofile, "profile-written".
 */
import fs from "node:fs";
import { Session } from "node:inspector/promises";

const session = new Session();
session.connect();
process.on("message", (message: { type?: string; path?: string }) => {
  const reply = (type: string, extra: Record<string, unknown> = {}) => process.send?.({ type, ...extra });
  (async () => {
    if (message.type === "profile-start") {
      await session.post("Profiler.enable");
      await session.post("Profiler.setSamplingInterval", { interval: 200 });
      await session.post("Profiler.start");
      reply("profile-started");
    } else if (message.type === "profile-stop" && message.path) {
      const { profile } = await session.post("Profiler.stop");
      fs.writeFileSync(message.path, JSON.stringify(profile));
      reply("profile-written");
    }
  })().catch((error: Error) => reply("error", { error: error.message }));
});
// The IPC channel must not keep a stopped service alive.
process.channel?.unref();

await import("../../src/main.ts");
