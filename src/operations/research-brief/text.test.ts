import { describe, expect, it } from "vitest";
import {
  canonicalUrl,
  contentFingerprint,
  contentSimilarity,
  isPromotional,
  keywords,
  numbersIn,
  sameContent,
  sentences,
  stem,
  terms,
} from "./text.ts";

describe("the tokenizer keeps numbers whole", () => {
  it('"10,000" is one token, not "000"', () => {
    expect(keywords("Walk 10,000 steps a day")).toEqual(["walk", "10,000", "steps", "day"]);
    expect(terms("Walk 10,000 steps a day")).toEqual(["walk", "10000", "step", "day"]);
    expect(terms("10000 steps")).toEqual(terms("10,000 steps"));
  });

  it('"3.5 %" and "3.5%" are the same term; decimals and short numbers stay', () => {
    expect(keywords("a 3.5 % rise")).toEqual(["3.5%", "rise"]);
    expect(terms("a 3.5 % rise")).toEqual(terms("a 3.5% rise"));
    expect(keywords("Python 3.12 since 2008, 7 days")).toEqual([
      "python",
      "3.12",
      "since",
      "2008",
      "7",
      "days",
    ]);
  });

  it("digits glued to letters are part of a word, not a number", () => {
    expect(keywords("COVID-19 and H2O")).toEqual(["covid-19", "h2o"]);
    expect(numbersIn("COVID-19 and H2O in 2024: 10,000 steps, 3.5 %").map((number) => number.value)).toEqual([
      "2024",
      "10000",
      "3.5%",
    ]);
  });
});

describe("light stemming", () => {
  it("plural, -ing and -ed forms meet", () => {
    expect(stem("pumps")).toBe("pump");
    expect(stem("batteries")).toBe(stem("battery"));
    expect(new Set([stem("charge"), stem("charges"), stem("charged"), stem("charging")]).size).toBe(1);
    expect(stem("stopped")).toBe("stop");
    expect(stem("running")).toBe("run");
    expect(stem("boxes")).toBe("box");
  });

  it("leaves words that only look inflected, and short words, alone", () => {
    expect(stem("glass")).toBe("glass");
    expect(stem("status")).toBe("status");
    expect(stem("analysis")).toBe("analysis");
    expect(stem("bus")).toBe("bus");
    expect(stem("sing")).toBe("sing");
  });
});

describe("sentence splitting", () => {
  it("does not split after Dr., Mr., e.g., i.e., U.S., et al., nor before a number after Fig. and No.", () => {
    expect(sentences("Dr. Smith met Mr. Jones in the U.S. capital. They talked.")).toEqual([
      "Dr. Smith met Mr. Jones in the U.S. capital.",
      "They talked.",
    ]);
    expect(sentences("Use a runtime, e.g. Node, i.e. The one we ship. Done.")).toEqual([
      "Use a runtime, e.g. Node, i.e. The one we ship.",
      "Done.",
    ]);
    expect(sentences("Smith et al. Found the same. See Fig. 3 and No. 5 for details. Next.")).toEqual([
      "Smith et al. Found the same.",
      "See Fig. 3 and No. 5 for details.",
      "Next.",
    ]);
    expect(sentences("Made in the U.S. It sells well.")).toEqual(["Made in the U.S. It sells well."]);
  });

  it('splits after a closing quote (`." The`), not fusing two sentences', () => {
    expect(sentences('He said "it works." The next day it broke.')).toEqual([
      'He said "it works."',
      "The next day it broke.",
    ]);
    expect(sentences("“It is cold.” Batteries slow down. Why? “Viscosity!” Then")).toEqual([
      "“It is cold.”",
      "Batteries slow down.",
      "Why?",
      "“Viscosity!”",
      "Then",
    ]);
  });

  it("citation markers after the stop stay with their sentence", () => {
    expect(sentences("Steps help. [1] More steps help more. [2][3] Done.")).toEqual([
      "Steps help. [1]",
      "More steps help more. [2][3]",
      "Done.",
    ]);
  });

  it("still splits a plain stop, and keeps decimals and lower-case continuations", () => {
    expect(sentences("The answer was no. People left. It rose 3.5 percent. the end")).toEqual([
      "The answer was no.",
      "People left.",
      "It rose 3.5 percent. the end",
    ]);
  });
});

describe("promotional text", () => {
  it("subscribe, sign up, buy now, discount, cookie notices, adverts, sponsored, newsletters", () => {
    for (const sentence of [
      "Subscribe now for unlimited access.",
      "Sign up to read the rest of this story.",
      "Buy now and save on winter tyres.",
      "Get a 20% discount with code WINTER.",
      "We use cookies to improve your experience.",
      "Advertisement",
      "This article is sponsored by Acme Batteries.",
      "Get our weekly newsletter in your inbox.",
    ]) {
      expect(isPromotional(sentence), sentence).toBe(true);
    }
  });

  it("ordinary sentences are not promotional", () => {
    expect(isPromotional("Lithium plating can permanently reduce capacity.")).toBe(false);
    expect(isPromotional("Cookies are baked at 180 degrees.")).toBe(false);
  });
});

describe("canonical URLs and content fingerprints", () => {
  it("an AMP or tracking-parameter copy has the article's canonical URL", () => {
    const article = canonicalUrl("https://news.example/2025/cold-batteries");
    for (const copy of [
      "https://www.news.example/2025/cold-batteries/",
      "http://news.example/2025/cold-batteries?utm_source=x&utm_medium=social&fbclid=abc#top",
      "https://news.example/2025/cold-batteries/amp",
      "https://news.example/2025/cold-batteries?amp=1",
      "https://amp.news.example/2025/cold-batteries?gclid=123",
    ]) {
      expect(canonicalUrl(copy), copy).toBe(article);
    }
    expect(canonicalUrl("https://en.m.wikipedia.org/wiki/Python_(programming_language)")).toBe(
      "https://en.wikipedia.org/wiki/Python_(programming_language)",
    );
  });

  it("keeps what names a different page: other paths and other parameters (in any order)", () => {
    expect(canonicalUrl("https://a.example/search?q=x&page=2")).toBe(
      canonicalUrl("https://a.example/search?page=2&q=x"),
    );
    expect(canonicalUrl("https://a.example/search?q=x&page=2")).not.toBe(
      canonicalUrl("https://a.example/search?q=x"),
    );
    expect(canonicalUrl("https://a.example/one")).not.toBe(canonicalUrl("https://a.example/two"));
  });

  const article = [
    "Lithium-ion batteries lose usable capacity in cold weather because the electrolyte becomes more viscous and lithium ions move more slowly between the electrodes.",
    "At minus twenty degrees Celsius a typical cell delivers roughly sixty to seventy percent of its rated capacity, although most of that capacity returns once the cell warms up again.",
    "Charging in the cold is the larger risk: lithium plating on the graphite anode can permanently reduce capacity.",
  ].join("\n\n");

  it("a copy with other spacing, case and promotional lines has the same fingerprint", () => {
    const amp = `Advertisement\n\n${article.replace(/\n\n/g, "\n").toUpperCase()}\n\nSubscribe to our newsletter.`;
    expect(contentFingerprint(amp)).toBe(contentFingerprint(article));
    expect(sameContent(contentFingerprint(amp), contentFingerprint(article))).toBe(true);
  });

  it("a different article on the same subject is not the same content", () => {
    const other =
      "Fleet operators limit cold-weather capacity loss by preconditioning batteries while vehicles are still plugged in, so the energy for heating comes from the grid. " +
      "Parking vehicles indoors keeps cells several degrees warmer overnight and reduces the morning range penalty.";
    expect(contentSimilarity(contentFingerprint(other), contentFingerprint(article))).toBeLessThan(0.2);
    expect(sameContent(contentFingerprint(other), contentFingerprint(article))).toBe(false);
  });
});
