# utility402 API instance, worker or facilitator (the command picks the role).
# Production image: no local test chain (anvil is an optional dependency and is left out).
FROM node:20-bookworm-slim AS deps
WORKDIR /app
# better-sqlite3 builds from source.
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ \
    && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --omit=optional

FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production HOST=0.0.0.0 PORT=8402 DATA_DIR=/var/lib/utility402
COPY --from=deps /app/node_modules ./node_modules
COPY package.json ./
COPY bin ./bin
COPY src ./src
COPY data ./data
RUN mkdir -p /var/lib/utility402 && chown node:node /var/lib/utility402
USER node
EXPOSE 8402
HEALTHCHECK --interval=10s --timeout=3s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+process.env.PORT+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
ENTRYPOINT ["node", "bin/utility402.js"]
CMD ["serve"]
