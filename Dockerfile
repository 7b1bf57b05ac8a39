# Multi-stage build: compile with dev dependencies, run with production ones only.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY bench ./bench
RUN npm ci --no-audit --no-fund && npm run build && npm prune --omit=dev

FROM node:20-bookworm-slim
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8778 \
    PLACEMENT_DATA_DIR=/var/lib/placement \
    PLACEMENT_AUTH_STRATEGY=keystone
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
COPY drizzle ./drizzle
RUN mkdir -p /var/lib/placement && chown node:node /var/lib/placement
USER node
EXPOSE 8778
# GET /healthcheck needs no token, answers only once migrations are done and the API serves, and
# is 503 while the database is unreachable (its check is cached, so probes do not load the database).
HEALTHCHECK --interval=15s --timeout=5s --start-period=20s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||8778)+'/healthcheck').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
CMD ["node", "--max-old-space-size=256", "--max-semi-space-size=32", "--initial-old-space-size=96", "dist/src/cli.js", "serve"]
