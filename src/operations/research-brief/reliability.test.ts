import { describe, expect, it } from "vitest";
import { sourceReliability } from "./reliability.ts";

describe("the reliability note of a source, from its address", () => {
  it.each([
    ["https://doi.org/10.1038/srep16696", "primary", "a DOI link to a published record"],
    ["https://www.nature.com/articles/s41586-020-2649-2", "primary", "a scholarly publisher (nature.com)"],
    ["https://www.cdc.gov/physical-activity-basics/", "primary", "a government site"],
    ["https://www.gov.uk/government/publications/x", "primary", "a government site"],
    ["https://web.mit.edu/research", "primary", "a university site"],
    ["https://www.ox.ac.uk/news", "primary", "a university site"],
    [
      "https://www.who.int/news-room/fact-sheets/detail/physical-activity",
      "primary",
      "an intergovernmental organisation (.int)",
    ],
    ["https://ec.europa.eu/eurostat/web/main", "primary", "an EU institution (europa.eu)"],
    [
      "https://en.wikipedia.org/wiki/Python_(programming_language)",
      "reference work",
      "an encyclopedia (wikipedia.org)",
    ],
    [
      "https://www.britannica.com/science/physics-science",
      "reference work",
      "an encyclopedia (britannica.com)",
    ],
    ["https://www.reuters.com/business/autos/", "news", "a news publisher (reuters.com)"],
    ["https://example.com/news/2025/cold-batteries", "news", "a news address (news host or /news/ path)"],
    ["https://medium.com/@someone/why-i-walk", "blog", "a blog platform (medium.com)"],
    ["https://someone.substack.com/p/steps", "blog", "a blog platform (substack.com)"],
    ["https://example.com/blog/cold-batteries", "blog", "a blog address (blog host or /blog/ path)"],
    [
      "https://batteries.example/cold",
      "unknown",
      "nothing in the address says what kind of publisher this is",
    ],
  ])("%s → %s", (url, reliability, reliabilityReason) => {
    expect(sourceReliability(url)).toEqual({ reliability, reliabilityReason });
  });
});
