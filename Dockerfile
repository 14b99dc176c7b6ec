# syntax=docker/dockerfile:1
# One image for every reposearch process; the command picks the role:
#   serve --role core | serve --role gateway | serve | index --dataset URL --shard I/N | keys create ...
ARG NODE_IMAGE=node:20-bookworm-slim

# ---- build: install every dependency, compile TypeScript, then drop the dev dependencies ----------
FROM ${NODE_IMAGE} AS build
WORKDIR /app
# Toolchain for native modules (better-sqlite3) when no prebuilt binary matches the platform.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ ca-certificates \
 && rm -rf /var/lib/apt/lists/*
# Dependencies first so this layer is cached until the lockfile changes. Scripts are skipped here
# (the package's own `prepare` would compile sources that are not copied yet) and the dependencies'
# install scripts run in `npm rebuild`. onnxruntime-node's would fetch CUDA libraries (its CPU runtime
# ships inside the package): package.json's `allowScripts` denies it on npm 11, and the package's own
# switch, ONNXRUNTIME_NODE_INSTALL=skip, skips it under the npm 10 of the node:20 image.
ENV ONNXRUNTIME_NODE_INSTALL=skip
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund \
 && npm rebuild --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY proto ./proto
COPY bin ./bin
COPY src ./src
RUN npm run build \
 && npm prune --omit=dev --ignore-scripts --no-audit --no-fund \
 && rm -rf dist/.tsbuildinfo

# ---- runtime: production dependencies, compiled code, protos; runs as an unprivileged user ------
FROM ${NODE_IMAGE} AS runtime
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="reposearch" \
      org.opencontainers.image.description="Semantic search over public source-code repositories, built for AI agents" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0"
# NODE_OPTIONS: the 64 MiB young-generation semi-space that SERVE_SEMI_SPACE_MB gives cluster workers,
# for the one-process pods of the Kubernetes and Compose deployments too (docs/architecture.md, "Processes").
ENV NODE_ENV=production \
    NODE_OPTIONS=--max-semi-space-size=64 \
    DATA_DIR=/data \
    HOST=0.0.0.0 \
    PORT=8080 \
    GRPC_PORT=50051 \
    CONNECT_PORT=50052 \
    METRICS_PORT=9464
WORKDIR /app
COPY --from=build /app/package.json /app/package-lock.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/bin ./bin
COPY --from=build /app/proto ./proto
# The image's `node` user (uid/gid 1000), by number so Kubernetes can verify runAsNonRoot.
RUN mkdir -p /data && chown 1000:1000 /data
USER 1000:1000
# 8080 REST gateway, 50051 gRPC core, 50052 the core's Connect port (Connect, gRPC-Web, gRPC), 9464
# core metrics and health.
EXPOSE 8080 50051 50052 9464
# No HEALTHCHECK: Kubernetes probes (gRPC health on the core, /health on the gateway) and the compose
# file's per-service healthchecks cover it, and a one-shot `index` container has nothing to check.
ENTRYPOINT ["node", "bin/reposearch.js"]
CMD ["serve"]
