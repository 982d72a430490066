# utility402 API instance, worker or facilitator (the command picks the role).
# Production image: built JavaScript (dist/, `npm run build`) run by node, no TypeScript loader; no local
# test chain (anvil is an optional dependency and is left out). The build stage compiles dist/ and the
# releases with the dev dependencies (esbuild, tsx, typescript), and both are shipped: the service serves
# the releases as built (their builder's tools are not installed).
# test/operator/production-start.e2e.test.ts runs this file's build, install and start with the same Node.

# A supported Node.js LTS line (Node 20 reached its end of life on 2026-04-30). Not 24: from 24.19 its
# node::ObjectWrap aborts the process ("Assertion failed: (env) != nullptr") when the garbage collector
# finalizes a better-sqlite3 12 statement, which the production start hit; better-sqlite3 13 (Node-API)
# fixes that but does not run on Node 20, the development line.
ARG NODE_VERSION=22

# Build dist/ and the four repository products' releases (their build needs dev dependencies, e.g. typescript).
FROM node:${NODE_VERSION}-bookworm-slim AS build
WORKDIR /app
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ \
    && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci --omit=optional
COPY src ./src
COPY data ./data
COPY products ./products
COPY scripts ./scripts
RUN npm run build
RUN RELEASES_DIR=/app/releases node dist/main.js build-products \
    csv-json-quality-toolkit agent-safe-paid-work-kit automation-data-toolkit-bundle engineering-unit-conversion-api

# Production dependencies only (better-sqlite3 builds from source).
FROM node:${NODE_VERSION}-bookworm-slim AS deps
WORKDIR /app
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ \
    && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --omit=optional

FROM node:${NODE_VERSION}-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production HOST=0.0.0.0 PORT=8402 DATA_DIR=/var/lib/utility402 RELEASES_DIR=/app/releases
COPY --from=deps /app/node_modules ./node_modules
COPY package.json ./
COPY data ./data
COPY products ./products
COPY --from=build /app/dist ./dist
COPY --from=build /app/releases ./releases
RUN mkdir -p /var/lib/utility402 && chown node:node /var/lib/utility402
USER node
EXPOSE 8402
HEALTHCHECK --interval=10s --timeout=3s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.HEALTH_PORT||process.env.PORT)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
ENTRYPOINT ["node", "dist/main.js"]
CMD ["serve"]
