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
# dist is a symlink to the build's own folder under .build/: the image takes the folder itself.
RUN npm run build && npm prune --omit=dev && cp -RL dist /app/dist.image

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
# Either app by command: `node dist/apps/api/src/main.js` (default), `node dist/apps/worker/src/main.js`,
# or the operator CLI `node dist/apps/cli/src/main.js migration:run`.
CMD ["node", "dist/apps/api/src/main.js"]
