# agent-intake: the service image. Build: docker build -t agent-intake .
# Run:   docker run -p 8787:8787 -e INTAKE_API_TOKEN=... -v intake-data:/data -v intake-media:/media agent-intake

# Build stage: dev dependencies (TypeScript, node-gyp's toolchain for better-sqlite3) stay here.
FROM node:20-bookworm-slim AS build
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
COPY scripts ./scripts
COPY src ./src
# `npm ci` builds dist/ through the prepare script; then only production dependencies are kept.
RUN npm ci --no-audit --no-fund && npm prune --omit=dev --no-audit --no-fund

FROM node:20-bookworm-slim
# tini is PID 1: it forwards SIGTERM to node and reaps zombies (node itself is not an init).
RUN apt-get update && apt-get install -y --no-install-recommends tini && rm -rf /var/lib/apt/lists/* \
  && mkdir -p /data /media && chown node:node /data /media
WORKDIR /app
COPY --from=build --chown=node:node /app/node_modules ./node_modules
COPY --from=build --chown=node:node /app/dist ./dist
COPY --chown=node:node console ./console
COPY --chown=node:node package.json ./
# Listening on every interface needs INTAKE_API_TOKEN (the service refuses to start without it).
ENV NODE_ENV=production HOST=0.0.0.0 PORT=8787 INTAKE_STORE=sqlite:/data/intake.db INTAKE_MEDIA_DIR=/media
USER node
VOLUME ["/data", "/media"]
EXPOSE 8787
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8787)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["node", "dist/main.js"]
