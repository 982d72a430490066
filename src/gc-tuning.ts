import v8 from "node:v8";

/*
 * Imported first by main.ts, before any other module allocates: turns off V8's allocation-site
 * pretenuring for this process. With it on, the unpaid 402 path ran in one of two modes, chosen at
 * start-up: in about half of the starts one allocation site whose objects outlive a scavenge was
 * decided "don't tenure" early (V8 never revisits that), every scavenge then kept about 2.5 MB alive
 * and promoted it (0.2 MB in the other starts), the old generation grew by that much per scavenge
 * until a full collection, and a 402 cost about 25 % more CPU. Without it, 17 of 17 starts ran in the
 * good mode (--trace-gc-nvp under 32 connections of unpaid csv-cleanup POSTs; docs/performance.md).
 */
v8.setFlagsFromString("--no-allocation-site-pretenuring");
