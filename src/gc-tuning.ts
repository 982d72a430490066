import v8 from "node:v8";

/*
 * Imported first by main.ts, before any other module allocates: turns off V8's allocation-site
 * pretenuring for this process. With it on, the unpaid 402 path ran in one of two modes, chosen by
 * chance at start-up: in about half of the starts every scavenge kept about 2.5 MB of young objects
 * alive and promoted them (0.2 MB in the other half), the old generation grew by that much per
 * scavenge until a full collection, and a 402 cost about 25 % more CPU (--trace-gc-nvp under 32
 * connections of unpaid csv-cleanup POSTs, 11 of 11 starts without it in the good mode: see
 * docs/performance.md). Nothing this service allocates at start-up lives long enough to gain from
 * pretenuring.
 */
v8.setFlagsFromString("--no-allocation-site-pretenuring");
