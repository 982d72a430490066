#!/usr/bin/env node
// The development entry: runs the TypeScript sources through tsx's loader (a dev dependency), so the
// tests and `npx utility402` need no build. Production runs the built JavaScript: `node dist/main.js`
// (`npm run build`; `npm start` builds first; the Dockerfile's command).
import { register } from "tsx/esm/api";

register();
await import("../src/main.ts");
