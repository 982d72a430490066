/**
 * Summarises a V8 .cpuprofile by self time: the top functions, and the same time grouped by where
 * the code lives (an npm package, a folder of this repository, Node's internals, GC).
 */
import fs from "node:fs";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

export interface ProfileSummary {
  totalMs: number;
  /** Share of samples where the main thread was busy (not idle). */
  busyMs: number;
  byPlace: { place: string; selfMs: number; percentOfBusy: number }[];
  topFunctions: { function: string; place: string; selfMs: number; percentOfBusy: number }[];
}

/** Where a frame's code lives: "viem", "@noble/curves", "src/payments", "node internals", "(garbage collector)". */
export function placeOf(url: string, functionName: string): string {
  if (!url) return functionName.startsWith("(") ? functionName : "(native)";
  const modules = url.lastIndexOf("node_modules/");
  if (modules >= 0) {
    const parts = url.slice(modules + "node_modules/".length).split("/");
    return parts[0]?.startsWith("@") ? `${parts[0]}/${parts[1]}` : (parts[0] as string);
  }
  if (url.startsWith("node:")) return "node internals";
  const source = url.match(/\/(src|bench|bin)\/([^/]+)\//);
  if (source) return `${source[1]}/${source[2]}`;
  const file = url.match(/\/(src|bench|bin)\/[^/]+$/);
  return file ? (file[1] as string) : url;
}

export function summariseProfile(file: string, top = 15): ProfileSummary {
  const profile = JSON.parse(fs.readFileSync(file, "utf8")) as CpuProfile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  // Samples taken while the profiler itself was being stopped (under node:inspector) are not the workload.
  const profilerOwn = new Set<number>();
  const mark = (id: number, inside: boolean) => {
    const node = byId.get(id) as ProfileNode;
    const own = inside || node.callFrame.url === "node:inspector";
    if (own) profilerOwn.add(id);
    for (const child of node.children ?? []) mark(child, own);
  };
  mark(profile.nodes[0]?.id as number, false);
  const selfUs = new Map<number, number>();
  profile.samples.forEach((id, i) => {
    if (profilerOwn.has(id)) return;
    selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  });
  const places = new Map<string, number>();
  const functions = new Map<string, { place: string; us: number }>();
  let idleUs = 0;
  let totalUs = 0;
  for (const [id, us] of selfUs) {
    const { callFrame } = byId.get(id) as ProfileNode;
    totalUs += us;
    if (callFrame.functionName === "(idle)") {
      idleUs += us;
      continue;
    }
    const place = placeOf(callFrame.url, callFrame.functionName);
    places.set(place, (places.get(place) ?? 0) + us);
    const name = `${callFrame.functionName || "(anonymous)"} ${callFrame.url.split("/").slice(-1)[0] ?? ""}:${callFrame.lineNumber + 1}`;
    const entry = functions.get(name) ?? { place, us: 0 };
    entry.us += us;
    functions.set(name, entry);
  }
  const busyUs = totalUs - idleUs;
  const percent = (us: number) => Number(((100 * us) / busyUs).toFixed(1));
  return {
    totalMs: Math.round(totalUs / 1000),
    busyMs: Math.round(busyUs / 1000),
    byPlace: [...places]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([place, us]) => ({ place, selfMs: Math.round(us / 1000), percentOfBusy: percent(us) })),
    topFunctions: [...functions]
      .sort((a, b) => b[1].us - a[1].us)
      .slice(0, top)
      .map(([name, { place, us }]) => ({
        function: name,
        place,
        selfMs: Math.round(us / 1000),
        percentOfBusy: percent(us),
      })),
  };
}
