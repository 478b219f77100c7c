# syntax=docker/dockerfile:1
# pgmcp's image: a build stage packs the package (npm pack: compiled JavaScript, migrations, seeds),
# then the runtime stage installs the packed files with the lockfile's production dependencies only.
# Every RUN uses paths relative to its WORKDIR: test/deploy/package.test.ts runs these same steps in
# a temporary folder, since no image can be built there.

FROM node:24-slim AS build
WORKDIR /build
COPY package.json package-lock.json ./
RUN --mount=type=cache,target=/root/.npm npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.package.json README.md ./
COPY bin/pgmcp.js ./bin/
COPY src ./src
COPY migrations ./migrations
COPY seeds ./seeds
RUN npm pack --silent && mkdir package && tar -xzf pgmcp-*.tgz -C package --strip-components=1

FROM node:24-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /build/package/ ./
COPY package-lock.json ./
# No optional dependencies: they are the embedded PostgreSQL's binaries, and the image always
# serves a database named by DATABASE_URL (or the PG* variables).
RUN --mount=type=cache,target=/root/.npm npm ci --omit=dev --omit=optional --no-audit --no-fund
# The image's own user (uid 1000 in the node images); it owns nothing in /app.
USER node
ENV HOST=0.0.0.0 PORT=3000 PGMCP_LOG_FORMAT=json PGMCP_STATE_DIR=/tmp/pgmcp
EXPOSE 3000
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.PORT}/healthz`).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["node", "bin/pgmcp.js"]
CMD ["serve", "--no-migrate"]
