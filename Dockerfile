# Marginalia: the web app, the detector worker and the release step share this one image.
#   docker build -t marginalia .
#   docker build --build-arg TORCH_INDEX_URL=<your mirror> -t marginalia .
# torch is pinned to the CPU build (no CUDA packages: the image stays ~1 GB smaller). It comes
# from the PyTorch CPU wheel index, a build argument so a mirror or a local wheel folder
# (e.g. --build-arg TORCH_INDEX_URL=file:///wheels with the folder copied in) can stand in.
FROM python:3.11-slim

ARG TORCH_VERSION=2.13.0
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PORT=8000

RUN useradd --create-home --uid 10001 marginalia
WORKDIR /srv/marginalia

# The heavy, rarely changing layer first.
RUN pip install --index-url "${TORCH_INDEX_URL}" "torch==${TORCH_VERSION}"

COPY --chown=marginalia:marginalia . .
# Editable install: the app finds migrations/, taxonomies/, templates/ and static/ beside it.
RUN pip install -e . && mkdir -p instance && chown marginalia:marginalia instance

USER marginalia
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD python -c "import os, urllib.request; urllib.request.urlopen(f'http://127.0.0.1:{os.environ[\"PORT\"]}/healthz', timeout=4)"
# Same commands as the Procfile: override with `marginalia worker` or `marginalia db upgrade`.
CMD ["marginalia", "web"]
