# The Session worker as a container: `npm run build` output (dist/ with the prebuilt workflow
# bundle) on Node 24 LTS, production dependencies only. Configure it with the TEMPORAL_* and HARNESS_*
# variables of docs/deploying.md. Not built in this project's CI (no container engine there).
FROM node:24-bookworm-slim AS build
WORKDIR /app
# better-sqlite3 compiles from source when no prebuilt binary matches.
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build && npm prune --omit=dev

FROM node:24-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production HARNESS_LOG_FORMAT=json HARNESS_DATA_DIR=/data
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/catalog ./catalog
RUN mkdir -p /data && chown node:node /data
USER node
# Worker.run drains on SIGTERM; give it longer than HARNESS_SHUTDOWN_GRACE_MS (default 30 s) to stop.
STOPSIGNAL SIGTERM
CMD ["node", "dist/worker/main.js"]
