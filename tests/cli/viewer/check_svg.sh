#!/bin/sh
# Check a `vkprof report --svg` picture in headless Chromium (offline): every
# label inside the picture, no two labels overlapping; writes a screenshot.
# See tests/cli/viewer/README.md.
#
# usage: tests/cli/viewer/check_svg.sh REPORT.svg [OUT.png]
#   VIEWER_DIR  where playwright-core gets installed (default /tmp/vkprof-viewer)
#   CHROMIUM    browser binary (default /usr/bin/chromium, Debian "chromium")
set -eu

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
    echo "usage: $0 REPORT.svg [OUT.png]" >&2
    exit 2
fi
svg=$1
out=${2:-/tmp/report-in-chromium.png}
here=$(cd "$(dirname "$0")" && pwd)
VIEWER_DIR=${VIEWER_DIR:-/tmp/vkprof-viewer}
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
PLAYWRIGHT_CORE_VERSION=1.65.1

[ -r "$svg" ] || { echo "cannot read $svg" >&2; exit 2; }
command -v node >/dev/null || { echo "need node (apt-get install -y nodejs npm)" >&2; exit 2; }
[ -x "$CHROMIUM" ] || { echo "need $CHROMIUM (apt-get install -y chromium)" >&2; exit 2; }
if [ ! -f "$VIEWER_DIR/node_modules/playwright-core/package.json" ]; then
    mkdir -p "$VIEWER_DIR"
    # playwright-core downloads no browser: it drives Debian's chromium
    npm install --prefix "$VIEWER_DIR" --no-audit --no-fund --loglevel=error \
        "playwright-core@$PLAYWRIGHT_CORE_VERSION" >&2
fi
PLAYWRIGHT_CORE="$VIEWER_DIR/node_modules/playwright-core" CHROMIUM="$CHROMIUM" \
    node "$here/svg_check.mjs" "$svg" "$out"
