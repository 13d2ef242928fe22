#!/usr/bin/env bash
# Installs the system packages the test suite drives for real: PostgreSQL, Chromium, npm (for
# axe-core), docker-compose to validate docker-compose.yml, and the multi-node rig's HAProxy,
# PgBouncer and Redis (tests/multinode/).
# Debian packages only (Playwright's own browser download cannot work offline).
set -euo pipefail
missing=()
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
[ -x /usr/bin/chromium ] || missing+=(chromium)
# npm installs axe-core, the accessibility checker the browser tests run (tests/browser/axe.py).
command -v npm >/dev/null 2>&1 || missing+=(npm)
# The multi-node rig (tests/multinode/rig.py): a router, a pooler, the rate limits' store.
[ -x /usr/sbin/haproxy ] || command -v haproxy >/dev/null 2>&1 || missing+=(haproxy)
[ -x /usr/sbin/pgbouncer ] || command -v pgbouncer >/dev/null 2>&1 || missing+=(pgbouncer)
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
# The fonts the pages fall back to in the browser tests: no page ships a font, and their
# stacks (static/css/marginalia.css: Charter, ..., serif for the text; system-ui, ...,
# sans-serif for the rest) end in fontconfig's serif and sans-serif, which are DejaVu Serif
# and DejaVu Sans once fonts-dejavu-core is there (`fc-match serif`). The tests hold with
# other fonts too (tests/browser/test_annotate_long_document.py lays the page out with
# several); these are the ones their screenshots and sizes were taken with. Emoji and
# Chinese, so screenshots of pages with them show glyphs, not boxes.
fc-list 2>/dev/null | grep -q "DejaVu Serif" || missing+=(fonts-dejavu-core)
fc-list 2>/dev/null | grep -qi "Noto Color Emoji" || missing+=(fonts-noto-color-emoji)
fc-list 2>/dev/null | grep -qi "WenQuanYi" || missing+=(fonts-wqy-microhei)
# `docker compose config` validation (no engine needed); Debian ships the v1 CLI.
command -v docker-compose >/dev/null 2>&1 || docker compose version >/dev/null 2>&1 \
  || missing+=(docker-compose)
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "installing system packages: ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
