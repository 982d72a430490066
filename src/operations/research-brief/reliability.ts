/**
 * A first note on how far to trust a source, from its address alone: what kind of publisher it is,
 * not whether this page is right. The signals, first match wins:
 *
 * - reference work: wikipedia.org and its sister projects, britannica.com, plato.stanford.edu, …
 * - primary: doi.org links; scholarly publishers (nature.com, science.org, arxiv.org, …);
 *   government (.gov, .gov.xx, .gouv.fr, .mil), universities (.edu, .ac.xx), intergovernmental
 *   bodies (.int, e.g. who.int) and EU institutions (europa.eu)
 * - blog: blog hosts (medium.com, substack.com, wordpress.com, blogspot.com, …), a `blog.` host or
 *   a `/blog/` path
 * - news: a short list of news publishers, a `news.` host or a `/news/` path
 * - unknown: nothing in the address says
 */

export type Reliability = "primary" | "reference work" | "news" | "blog" | "unknown";

export interface ReliabilityNote {
  reliability: Reliability;
  reliabilityReason: string;
}

const REFERENCE_WORKS = [
  "wikipedia.org",
  "wikibooks.org",
  "wikisource.org",
  "wiktionary.org",
  "britannica.com",
  "plato.stanford.edu",
  "iep.utm.edu",
  "scholarpedia.org",
  "encyclopedia.com",
];
const SCHOLARLY = [
  "nature.com",
  "science.org",
  "sciencedirect.com",
  "springer.com",
  "wiley.com",
  "tandfonline.com",
  "plos.org",
  "bmj.com",
  "thelancet.com",
  "nejm.org",
  "jamanetwork.com",
  "cell.com",
  "pnas.org",
  "acm.org",
  "ieee.org",
  "arxiv.org",
  "biorxiv.org",
  "medrxiv.org",
  "ssrn.com",
];
const BLOG_HOSTS = [
  "medium.com",
  "substack.com",
  "wordpress.com",
  "blogspot.com",
  "tumblr.com",
  "ghost.io",
  "dev.to",
  "hashnode.dev",
  "livejournal.com",
];
const NEWS = [
  "reuters.com",
  "apnews.com",
  "bbc.co.uk",
  "bbc.com",
  "nytimes.com",
  "theguardian.com",
  "washingtonpost.com",
  "wsj.com",
  "ft.com",
  "bloomberg.com",
  "economist.com",
  "cnn.com",
  "npr.org",
  "aljazeera.com",
  "cnbc.com",
  "theverge.com",
  "arstechnica.com",
  "techcrunch.com",
  "wired.com",
  "lemonde.fr",
  "spiegel.de",
  "zeit.de",
  "elpais.com",
  "yle.fi",
  "abc.net.au",
  "cbc.ca",
];

const within = (host: string, domains: readonly string[]) =>
  domains.find((domain) => host === domain || host.endsWith(`.${domain}`));

export function sourceReliability(url: string): ReliabilityNote {
  let host: string;
  let path: string;
  try {
    const parsed = new URL(url);
    host = parsed.hostname.toLowerCase().replace(/^www\./, "");
    path = parsed.pathname.toLowerCase();
  } catch {
    return { reliability: "unknown", reliabilityReason: "the address could not be read" };
  }
  const note = (reliability: Reliability, reliabilityReason: string) => ({ reliability, reliabilityReason });
  const reference = within(host, REFERENCE_WORKS);
  if (reference) return note("reference work", `an encyclopedia (${reference})`);
  if (host === "doi.org" || host === "dx.doi.org") return note("primary", "a DOI link to a published record");
  const scholarly = within(host, SCHOLARLY);
  if (scholarly) return note("primary", `a scholarly publisher (${scholarly})`);
  const blog = within(host, BLOG_HOSTS);
  if (blog) return note("blog", `a blog platform (${blog})`);
  if (host.startsWith("blog.") || host.startsWith("blogs.") || /\/blogs?\//.test(path)) {
    return note("blog", "a blog address (blog host or /blog/ path)");
  }
  if (/(?:^|\.)gov(?:\.[a-z]{2})?$|(?:^|\.)gouv\.[a-z]{2}$|\.gc\.ca$|\.mil$/.test(host)) {
    return note("primary", "a government site");
  }
  if (/\.edu(?:\.[a-z]{2})?$|\.ac\.[a-z]{2}$/.test(host)) return note("primary", "a university site");
  if (host.endsWith(".int")) return note("primary", "an intergovernmental organisation (.int)");
  if (host === "europa.eu" || host.endsWith(".europa.eu")) {
    return note("primary", "an EU institution (europa.eu)");
  }
  const news = within(host, NEWS);
  if (news) return note("news", `a news publisher (${news})`);
  if (host.startsWith("news.") || /\/news\//.test(path)) {
    return note("news", "a news address (news host or /news/ path)");
  }
  return note("unknown", "nothing in the address says what kind of publisher this is");
}
