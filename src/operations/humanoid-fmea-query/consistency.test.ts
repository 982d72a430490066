import fs from "node:fs";
import { describe, expect, it } from "vitest";
import {
  CATALOGUE_URL,
  type CatalogueFile,
  DETECTION_FLOOR,
  type FmeaEntry,
  loadCatalogue,
  parseCatalogue,
} from "./catalogue.ts";

/**
 * Checks that run over every entry and every string in it, so that a new entry, or a new sentence
 * in an old one, is held to the same rules without anyone writing a case for it.
 */
const catalogue = loadCatalogue();
const entries = catalogue.entries;

/** Every string reachable in a value. */
function strings(value: unknown): string[] {
  if (typeof value === "string") return [value];
  if (Array.isArray(value)) return value.flatMap(strings);
  if (value && typeof value === "object") return Object.values(value).flatMap(strings);
  return [];
}

/**
 * ISO/TS 15066:2016 Annex A, Table A.2: the quasi-static contact force limit per body region, in N
 * (ISO 10218-2:2025 now holds the same values). Transient contact may reach twice the quasi-static
 * value. The body model has no foot: the nearest region is the lower leg. Written out here from the
 * table, independently of the catalogue.
 */
const QUASI_STATIC_FORCE: readonly { region: string; words: RegExp; newtons: number | null }[] = [
  { region: "skull and forehead", words: /\b(skull|forehead|head)\b/i, newtons: 130 },
  { region: "face", words: /\bface\b/i, newtons: 65 },
  { region: "neck", words: /\bneck\b/i, newtons: 150 },
  { region: "back and shoulders", words: /\b(back|shoulders?)\b/i, newtons: 210 },
  { region: "chest", words: /\b(chest|sternum)\b/i, newtons: 140 },
  { region: "abdomen", words: /\babdomen\b/i, newtons: 110 },
  { region: "pelvis", words: /\bpelvis\b/i, newtons: 180 },
  { region: "upper arms and elbow joints", words: /\b(upper arms?|elbows?)\b/i, newtons: 150 },
  { region: "lower arms and wrist joints", words: /\b(lower arms?|forearms?|wrists?)\b/i, newtons: 160 },
  { region: "hands and fingers", words: /\b(hands?|fingers?|palms?)\b/i, newtons: 140 },
  { region: "thighs and knees", words: /\b(thighs?|knees?)\b/i, newtons: 220 },
  { region: "lower legs", words: /\b(lower legs?|shins?|calf|calves)\b/i, newtons: 130 },
  { region: "foot (not in the ISO/TS 15066 body model)", words: /\b(foot|feet|toes?)\b/i, newtons: null },
];

/** A clause that sets a force limit for contact with a person (not a sensor range or a handling force). */
const CONTACT_LIMIT =
  /15066|body[- ]region|closing force|contact force|transient|quasi-static|clamp|unload|strike|struck|finger probe/i;
const FORCE = /(\d[\d,]*(?:\.\d+)?)\s?N(?![·/\w])/g;

/** For one clause: each force value, the body region named nearest to it, and what is wrong, if anything. */
function checkForces(clause: string): string[] {
  if (!CONTACT_LIMIT.test(clause)) return [];
  const problems: string[] = [];
  for (const force of clause.matchAll(FORCE)) {
    const value = Number((force[1] as string).replace(/,/g, ""));
    const at = force.index ?? 0;
    let nearest: { region: string; newtons: number | null; distance: number } | undefined;
    for (const region of QUASI_STATIC_FORCE) {
      for (const word of clause.matchAll(new RegExp(region.words.source, "gi"))) {
        const distance = Math.abs((word.index ?? 0) - at);
        if (!nearest || distance < nearest.distance) nearest = { ...region, distance };
      }
    }
    if (!nearest) problems.push(`${value} N names no body region`);
    else if (nearest.newtons === null) problems.push(`${value} N for the ${nearest.region}`);
    else {
      const allowed = /transient/i.test(clause)
        ? [nearest.newtons, 2 * nearest.newtons]
        : /quasi-static/i.test(clause)
          ? [nearest.newtons]
          : [nearest.newtons, 2 * nearest.newtons];
      if (!allowed.includes(value))
        problems.push(
          `${value} N for ${nearest.region}, whose ISO/TS 15066 value is ${allowed.join(" or ")} N`,
        );
    }
  }
  return problems;
}

const clauses = (text: string) => text.split(/;|\. /);

describe("ISO/TS 15066 contact forces match the body region they name", () => {
  it("the checker finds the defects it is for", () => {
    expect(checkForces("the closing force on a finger probe stays ≤ 65 N")).toEqual([
      "65 N for hands and fingers, whose ISO/TS 15066 value is 140 or 280 N",
    ]);
    expect(checkForces("any accidental contact is unloaded below 200 N")).toEqual([
      "200 N names no body region",
    ]);
    expect(checkForces("the stepped-on foot is unloaded below 130 N")).toEqual([
      "130 N for the foot (not in the ISO/TS 15066 body model)",
    ]);
    expect(checkForces("the stepped-on foot, taken as the lower leg, is unloaded below 130 N")).toEqual([]);
    expect(checkForces("measured chest transient force ≤ 280 N")).toEqual([]);
    expect(checkForces("quasi-static chest force ≤ 280 N")).toEqual([
      "280 N for chest, whose ISO/TS 15066 value is 140 N",
    ]);
    // Not a contact limit: a sensor's test range, a person's handling effort.
    expect(checkForces("press a probe on the skin with 10 to 150 N")).toEqual([]);
    expect(checkForces("with a hand force ≤ 200 N")).toEqual([]);
  });

  it("in every string of every entry", () => {
    const problems = entries.flatMap((e) =>
      strings(e)
        .flatMap(clauses)
        .flatMap((clause) => checkForces(clause).map((p) => `${e.id}: ${p} in "${clause.trim()}"`)),
    );
    expect(problems).toEqual([]);
    // Pressure limits (N/cm²) are not transcribed above: the first one cited needs its row here.
    expect(entries.filter((e) => /N\/cm/.test(JSON.stringify(e))).map((e) => e.id)).toEqual([]);
  });
});

/**
 * The same harm described in different entries: each phrase class must carry one harm and so one
 * severity, whatever the cause. Matched on what fails, what it leads to (the effects) and the
 * hazardous event: an entry carries the worst harm it names anywhere in them.
 */
const HARM_PHRASES: readonly { name: string; phrase: RegExp; harm: string }[] = [
  {
    name: "robot falls onto a person",
    phrase:
      /(falls?|falling|tips?|drops?) (from standing height |from height |from a gantry or hoist )?onto (a |the )?(nearby |worker|bystander|person|people)|fall of (a|the) (65 kg )?(balancing )?robot|falling robot/i,
    harm: "robot-falls-onto-person",
  },
  {
    // The robot itself falling, whatever it lands on: a 65 kg humanoid near people can land on one.
    name: "the robot falls",
    phrase:
      /\b(robot|biped)\b[^|.;:]{0,60}?\b(falls|fell|tips over|topples)\b(?! back)|\brobot's (own )?fall\b(?! zone)/i,
    harm: "robot-falls-onto-person",
  },
  {
    name: "robot driven, walked or moved into a person",
    phrase:
      /\b(driv|walk|steer|run|mov|reach|carr|push)\w*( the robot| it)?( or \w+)? into (a |the )?(person|people|worker|bystander|crowd)|collision with (a |the )?(person|people|worker)/i,
    harm: "body-impact",
  },
  {
    // A person knocked over or thrown off balance by the robot's body: an impact, whatever moved it.
    name: "a person knocked over or off balance",
    phrase:
      /\b(person|people|guide|bystander|worker|operator)s? (is |are )?(knocked (over|down|off balance)|loses? (their |his or her )?balance)|leans? (its body )?into (a |the )?(person|guide|worker|bystander)/i,
    harm: "body-impact",
  },
  {
    // A robot that stands on a person's foot stands on an uneven foothold next to that person: its
    // worst harm is the fall onto them, not the crushed foot (there is no foot-crushing harm).
    name: "robot steps on a foot",
    phrase: /\b(step|steps|stepping|lands?) (lands )?on(to)? (a |the )?(\w+'s )?(foot|feet|toes)/i,
    harm: "robot-falls-onto-person",
  },
  {
    name: "fingers or a hand trapped or crushed",
    phrase:
      /\btraps? (fingers|a hand)|(fingers?|hands?) (crushed|trapped|pinched)|closes .* on a person's hand/i,
    harm: "hand-crushing",
  },
];

const harmText = (e: FmeaEntry) => [e.failureMode, ...e.effects, e.hazard.description].join(" | ");

describe("one harm, one severity, for every phrase that names the harm", () => {
  const severity = (harm: string) => catalogue.harms.find((h) => h.id === harm)?.severity ?? 0;
  // An entry naming several harms carries the worst of them, and that one must be named too.
  const worstNamed = (e: FmeaEntry) =>
    HARM_PHRASES.filter((c) => c.phrase.test(harmText(e))).sort(
      (a, b) => severity(b.harm) - severity(a.harm),
    )[0];

  it("the phrases find the defects they are for", () => {
    const named = (text: string) => HARM_PHRASES.filter((c) => c.phrase.test(text)).map((c) => c.name);
    expect(named("Robot loses balance on the uneven foothold and falls")).toContain("the robot falls");
    expect(named("Guide loses balance pulling against a stepping robot")).toContain(
      "a person knocked over or off balance",
    );
    expect(named("Robot steps onto the guide's feet or leans its body into the guide")).toContain(
      "a person knocked over or off balance",
    );
    // A fall the robot once had is a cause, not a harm this entry leads to.
    expect(named("Extrinsic calibration lost after a fall or bump")).toEqual([]);
    expect(named("The robot falls back to its careful gait")).toEqual([]);
  });

  it.each(HARM_PHRASES)("$name → $harm", ({ phrase, harm }) => {
    const matching = entries.filter((e) => phrase.test(harmText(e)));
    expect(matching.length).toBeGreaterThan(0);
    const wrong = matching.filter((e) => {
      const worst = worstNamed(e);
      const expected = worst && severity(worst.harm) > severity(harm) ? worst.harm : harm;
      // A harm as bad or worse that the phrases do not know (a blocked evacuation route) may govern.
      const acceptable = e.hazard.harm === expected || severity(e.hazard.harm) >= severity(expected);
      return !acceptable || e.severity !== severity(e.hazard.harm);
    });
    expect(wrong.map((e) => `${e.id} ${e.hazard.harm} ${e.severity}`)).toEqual([]);
  });

  it("no harm's definition names a worse harm (the definitions do not overlap downward)", () => {
    const overlaps = catalogue.harms.flatMap((h) =>
      HARM_PHRASES.filter((c) => c.phrase.test(h.description) && severity(c.harm) > h.severity).map(
        (c) => `${h.id} (${h.severity}) names "${c.name}" (${c.harm}, ${severity(c.harm)})`,
      ),
    );
    expect(overlaps).toEqual([]);
  });
});

/**
 * Policies an entry can state in its requirement, controls, further actions and pass criterion (not in
 * its failure mode, causes or effects, which describe the failure). No entry may both allow and
 * forbid the same thing.
 */
const POLICIES: readonly { topic: string; allows: RegExp; forbids: RegExp }[] = [
  {
    topic: "automatic restart after a stop",
    allows:
      /(?<!no )automatic (resume|restart)s? (only )?(after|when|is allowed|is permitted)|every automatic (resume|restart)|resumes? automatically (after|once|when)/i,
    forbids:
      /never restarts?|no (motion|restart|resume)s? without a deliberate|only on a deliberate|deliberate (restart|start)|no automatic (resume|restart)|0 automatic (resumes|restarts)/i,
  },
  {
    topic: "a falling robot striking a person",
    allows: /accepts contact|every strike stays within|strike[s]? (stays?|within) the/i,
    forbids: /is not struck|no (one|person) is struck|0 of \d+ falls? (strike|touch)/i,
  },
  {
    topic: "the local safety layer in teleoperation",
    allows: /(safety layer|safety functions?) (is |are )?(disabled|bypassed|off) in teleoperation/i,
    forbids: /(safety layer|safety functions?)[^.;]* (stays?|remains?) active in teleoperation/i,
  },
];

const policyText = (e: FmeaEntry) =>
  [
    e.function,
    ...e.preventionControls,
    ...e.detectionControls,
    ...(e.furtherActions ?? []),
    e.verificationTest.method,
    e.verificationTest.acceptanceCriteria,
  ].join(" | ");

describe("no entry both allows and forbids the same thing", () => {
  it("the checker finds the defect it is for", () => {
    const [restart] = POLICIES;
    const both = "Resume only on a deliberate restart | Automatic resume only after a protective stop";
    expect(restart?.allows.test(both) && restart?.forbids.test(both)).toBe(true);
    expect(restart?.allows.test("No automatic resume after any stop")).toBe(false);
  });

  it.each(POLICIES)("$topic", ({ allows, forbids }) => {
    const contradictory = entries.filter((e) => allows.test(policyText(e)) && forbids.test(policyText(e)));
    expect(contradictory.map((e) => e.id)).toEqual([]);
  });
});

/**
 * FMEA-MSR credits a monitor for the harm its response prevents or limits. A response that comes
 * after the harm (a stop after the first impact, a protective fall that is still a fall near people)
 * leaves the effect as severe as before: monitoring M is 10 and the design FMEA governs operation.
 */
const TOO_LATE =
  /not prevented|after the (first )?(contact|impact|collision|strike)|protective fall|\bfall[ -](response|behaviour|direction)|fall direction away/i;

describe("a system response that comes after the harm earns no monitoring credit", () => {
  it("the phrase finds the responses it is for", () => {
    expect(TOO_LATE.test("Gait stopped after the contact; the first impact is not prevented")).toBe(true);
    expect(TOO_LATE.test("Protective fall behaviour: fall direction away from tracked people")).toBe(true);
    expect(
      TOO_LATE.test("Joint fault: safe stop of the limb, or the fall response if it is a stance leg"),
    ).toBe(true);
    expect(TOO_LATE.test("Stop-and-stand on a wide stance")).toBe(false);
  });

  it("every such response has M 10, its effect after the response at the entry's severity, and DFMEA governing", () => {
    const late = entries.filter((e) => e.msr && TOO_LATE.test(e.msr.systemResponse));
    expect(late.length).toBeGreaterThan(0);
    const wrong = late.filter(
      (e) =>
        e.msr?.monitoring !== 10 ||
        e.msr?.severityAfterResponse !== e.severity ||
        !e.msr?.effectAfterResponse,
    );
    expect(wrong.map((e) => `${e.id} M${e.msr?.monitoring} S'${e.msr?.severityAfterResponse}`)).toEqual([]);
  });
});

/**
 * One operating concept for people near a balancing robot (HFM-STR-01): the robot steps only while
 * its declared fall zone is clear; a person inside the zone only while it stands in its supported
 * stance. Every entry that states a fall zone, or a separation or passing distance to people, must
 * agree with it, and none may claim the robot cannot fall (a claim no test can verify).
 */
describe("one fall-zone concept across every entry", () => {
  const FALL_ZONE_M = 2.0;
  const sentences = (e: FmeaEntry) => strings(e).flatMap(clauses);

  it("the checkers find the defects they are for", () => {
    expect(
      walkingSeparation("minimum passing distance of 0.8 m and speed cap of 0.5 m/s near groups"),
    ).toEqual([0.8]);
    expect(walkingSeparation("Minimum separation of 0.5 m from people enforced")).toEqual([0.5]);
    expect(walkingSeparation("people within 0.5 m only while it stands in its supported stance")).toEqual([]);
    expect(fallZones("the declared 1.5 m fall zone")).toEqual([1.5]);
    expect(fallZones("Declared fall zone (2.0 m radius: 1.7 m standing height plus 0.3 m)")).toEqual([2.0]);
  });

  it(`every fall zone is ${FALL_ZONE_M} m`, () => {
    const other = entries.flatMap((e) =>
      sentences(e).flatMap((c) =>
        fallZones(c)
          .filter((m) => m !== FALL_ZONE_M)
          .map((m) => `${e.id}: ${m} m`),
      ),
    );
    expect(other).toEqual([]);
  });

  it("no separation or passing distance to people below the fall zone while the robot steps", () => {
    const closer = entries.flatMap((e) =>
      sentences(e).flatMap((c) =>
        walkingSeparation(c)
          .filter((m) => m < FALL_ZONE_M)
          .map((m) => `${e.id}: ${m} m in "${c.trim()}"`),
      ),
    );
    expect(closer).toEqual([]);
  });

  it("no entry claims the robot cannot fall", () => {
    const claims = entries.filter((e) =>
      /cannot fall|can ?not tip|never falls|fall is impossible/i.test(JSON.stringify(e)),
    );
    expect(claims.map((e) => e.id)).toEqual([]);
  });
});

/** Fall-zone radii named in a clause, in m. */
function fallZones(clause: string): number[] {
  return [...clause.matchAll(/(\d+(?:\.\d+)?) ?m (radius )?fall zone|fall zone \((\d+(?:\.\d+)?) ?m/gi)].map(
    (m) => Number(m[1] ?? m[3]),
  );
}

/**
 * Distances a clause sets between people and the robot (separation, passing distance), in m, unless
 * the clause confines them to the robot standing in its stance.
 */
function walkingSeparation(clause: string): number[] {
  if (!/separation|passing distance|passes people/i.test(clause)) return [];
  if (/\b(stance|stands|standing still|stationary)\b/i.test(clause)) return [];
  // The distance the separation is set to: the first length after the word, not a stopping distance
  // compared with it further on.
  return [
    ...clause.matchAll(
      /(?:separation|passing distance|passes people)[^;:]{0,80}?(\d+(?:\.\d+)?) ?m(?![/\w²])/gi,
    ),
  ].map((m) => Number(m[1]));
}

/**
 * ISO 13854:2017 minimum gaps, in mm, for the body parts a closing gap of a humanoid can take in
 * (from our knowledge of the standard; the shared FMEA reference outline marks it [K], not checked against
 * its text). A gap limit must suit the largest body part the entry says can reach the gap.
 */
const MIN_GAP_MM: readonly { part: string; words: RegExp; mm: number }[] = [
  { part: "finger", words: /\bfingers?\b/i, mm: 25 },
  { part: "hand", words: /\bhands?\b/i, mm: 100 },
  { part: "arm", words: /\barms?\b/i, mm: 120 },
];

function gapProblems(e: FmeaEntry): string[] {
  const reaching = [e.function, e.failureMode, ...e.effects].join(" ");
  const largest = MIN_GAP_MM.filter((p) => p.words.test(reaching)).at(-1);
  if (!largest) return [];
  return strings(e)
    .flatMap(clauses)
    .flatMap((clause) =>
      [...clause.matchAll(/\bgap (above|over|of at least|at least|≥) ?(\d+) ?mm/gi)]
        .map((m) => Number(m[2]))
        .filter((mm) => mm < largest.mm)
        .map(
          (mm) => `${e.id}: gap ${mm} mm where the ${largest.part} can reach (ISO 13854: ${largest.mm} mm)`,
        ),
    );
}

describe("closing gaps suit the body part that can reach them (ISO 13854)", () => {
  it("the checker finds the defect it is for", () => {
    const entry = entries.find((x) => x.id === "HFM-STR-03") as FmeaEntry;
    const old = { ...entry, preventionControls: ["Joint-range limit that keeps the knee gap above 25 mm"] };
    expect(gapProblems(old)).toEqual(["HFM-STR-03: gap 25 mm where the arm can reach (ISO 13854: 120 mm)"]);
  });

  it("in every entry", () => {
    expect(entries.flatMap(gapProblems)).toEqual([]);
  });
});

describe("pass criteria are sized samples, not tokens", () => {
  it('no acceptance criterion passes on fewer than 3 trials ("1 of 1")', () => {
    const tokens = entries.flatMap((e) =>
      [...e.verificationTest.acceptanceCriteria.matchAll(/(?<![\d,])(\d+) of (\d+)\b/g)]
        .filter((m) => Number(m[2]) < 3)
        .map((m) => `${e.id}: ${m[0]}`),
    );
    expect(tokens).toEqual([]);
  });
});

/** A response that only tells people, who then act: the monitoring scale's 8–9 band (docs). */
const ALERTS_PEOPLE = /(alert|alarm) to the [\w ]*(crew|operator)|people (around )?(see|decide)|who stops/i;

describe("monitoring that relies on people reacting is rated 8 or 9, as the scale says", () => {
  it("in every entry whose system response alerts people who then act", () => {
    const alerting = entries.filter((e) => e.msr && ALERTS_PEOPLE.test(e.msr.systemResponse));
    expect(alerting.map((e) => e.id)).toEqual(["HFM-STR-09", "HFM-COM-02", "HFM-COM-07"]);
    const off = alerting.filter((e) => (e.msr?.monitoring ?? 0) < 8 || (e.msr?.monitoring ?? 0) > 9);
    expect(off.map((e) => `${e.id} M${e.msr?.monitoring}`)).toEqual([]);
  });
});

/**
 * FMEA-MSR rates a run-time monitor as monitoring M; the design FMEA's detection D rates only what
 * finds the failure before release. D rests on the entry's verification test (designVerification:
 * its kind and coverage) and is never better than DETECTION_FLOOR allows for them.
 */
describe("detection D rests on the pre-release verification alone, for every entry", () => {
  const raw = JSON.parse(fs.readFileSync(CATALOGUE_URL, "utf8")) as CatalogueFile;
  const floorOf = (e: FmeaEntry) =>
    DETECTION_FLOOR[e.designVerification.method][e.designVerification.coverage];

  it("no entry's detection is better than its verification supports, monitored or not", () => {
    const better = entries.filter((e) => e.detection < floorOf(e));
    expect(better.map((e) => `${e.id} D${e.detection} < ${floorOf(e)}`)).toEqual([]);
    expect(entries.filter((e) => e.msr).length).toBe(82);
  });

  it("claims coverage of every declared condition only where the test says every, all or each", () => {
    const claimed = entries.filter((e) => e.designVerification.coverage === "every-declared-condition");
    expect(claimed.length).toBeGreaterThan(0);
    const unsupported = claimed.filter((e) => !/\b(every|all|each)\b/i.test(e.verificationTest.method));
    expect(unsupported.map((e) => e.id)).toEqual([]);
  });

  it("refuses, for each entry in turn, a detection one better than its verification supports", () => {
    let refused = 0;
    raw.entries.forEach((entry, index) => {
      const floor = floorOf(entry);
      if (floor === 1) return;
      const file = structuredClone(raw);
      (file.entries[index] as FmeaEntry).detection = floor - 1;
      expect(() => parseCatalogue(file), entry.id).toThrow(
        new RegExp(`entries/${index}/detection: .*supports detection ${floor} at best`),
      );
      refused++;
    });
    expect(refused).toBe(96);
  });

  it("rates the monitor in M and not in D: removing every monitor's rating leaves every detection valid", () => {
    const file = structuredClone(raw);
    for (const e of file.entries) delete (e as Partial<FmeaEntry>).msr;
    const parsed = parseCatalogue(file);
    expect(parsed.entries.map((e) => e.detection)).toEqual(entries.map((e) => e.detection));
  });
});

/**
 * The FMEA-MSR form records the most severe effect after the system response. Every monitored
 * entry states it from its own content: what its own response leaves, below its severity where the
 * response limits the harm, as severe as before where it comes too late (M 10).
 */
describe("every monitored entry states the effect after its response", () => {
  const monitored = entries.filter((e): e is FmeaEntry & { msr: NonNullable<FmeaEntry["msr"]> } => !!e.msr);
  const normal = (text: string) =>
    text
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, " ")
      .trim();
  const STOP = new Set(
    "about after again before being could every from into other robot robots still their there these they this those until when where which while with without within".split(
      " ",
    ),
  );
  const words = (text: string) =>
    new Set(
      normal(text)
        .split(" ")
        .filter((w) => w.length >= 5 && !STOP.has(w)),
    );

  it("is stated, with its severity, on all 82", () => {
    const missing = monitored.filter((e) => !e.msr.effectAfterResponse || !e.msr.severityAfterResponse);
    expect(missing.map((e) => e.id)).toEqual([]);
    expect(monitored).toHaveLength(82);
  });

  it("differs from every original effect and lowers the severity where the response limits the harm", () => {
    const wrong = monitored
      .filter((e) => e.msr.monitoring < 10)
      .filter(
        (e) =>
          e.msr.severityAfterResponse >= e.severity ||
          e.effects.some((effect) => {
            const [before, after] = [normal(effect), normal(e.msr.effectAfterResponse)];
            return before === after || before.includes(after);
          }),
      );
    expect(wrong.map((e) => `${e.id} S${e.severity} S'${e.msr.severityAfterResponse}`)).toEqual([]);
  });

  it("keeps the severity where the response comes too late (M 10)", () => {
    const late = monitored.filter((e) => e.msr.monitoring === 10);
    expect(late.length).toBeGreaterThan(0);
    expect(late.filter((e) => e.msr.severityAfterResponse !== e.severity).map((e) => e.id)).toEqual([]);
  });

  it("comes from the entry's own content, not a shared filler: no two alike, each naming its own response and harm", () => {
    const seen = new Map<string, string>();
    const repeated = monitored.filter((e) => {
      const key = normal(e.msr.effectAfterResponse);
      const first = seen.get(key);
      seen.set(key, first ?? e.id);
      return first !== undefined;
    });
    expect(repeated.map((e) => e.id)).toEqual([]);
    const unrelated = monitored.filter((e) => {
      const after = words(e.msr.effectAfterResponse);
      const shared = (text: string) => [...words(text)].filter((w) => after.has(w)).length;
      // Something of what its response does, and something of the failure and harm it answers.
      const failure = [e.failureMode, ...e.effects, e.hazard.description].join(" ");
      return shared(e.msr.systemResponse) < 1 || shared(failure) < 1;
    });
    expect(unrelated.map((e) => e.id)).toEqual([]);
  });
});
