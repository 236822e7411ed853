#!/bin/sh
# Open a vkprof trace in speedscope (real web app, headless Chromium, offline)
# and write a screenshot; exit nonzero if speedscope cannot import the trace
# or complains about slice nesting.  See tests/cli/viewer/README.md.
#
# usage: tests/cli/viewer/open_in_speedscope.sh TRACE.json [OUT.png]
#   VIEWER_DIR  where speedscope + playwright-core get installed
#               (default /tmp/vkprof-viewer; never inside the repository)
#   CHROMIUM    browser binary (default /usr/bin/chromium, Debian "chromium")
set -eu

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
    echo "usage: $0 TRACE.json [OUT.png]" >&2
    exit 2
fi
trace=$1
out=${2:-/tmp/trace-in-speedscope.png}
here=$(cd "$(dirname "$0")" && pwd)
VIEWER_DIR=${VIEWER_DIR:-/tmp/vkprof-viewer}
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
SPEEDSCOPE_VERSION=1.25.0
PLAYWRIGHT_CORE_VERSION=1.65.1

[ -r "$trace" ] || { echo "cannot read $trace" >&2; exit 2; }
command -v node >/dev/null || { echo "need node (apt-get install -y nodejs npm)" >&2; exit 2; }
[ -x "$CHROMIUM" ] || { echo "need $CHROMIUM (apt-get install -y chromium)" >&2; exit 2; }

if [ ! -f "$VIEWER_DIR/node_modules/speedscope/dist/release/index.html" ] ||
   [ ! -f "$VIEWER_DIR/node_modules/playwright-core/package.json" ]; then
    mkdir -p "$VIEWER_DIR"
    # playwright-core downloads no browser; speedscope ships its built web app
    npm install --prefix "$VIEWER_DIR" --no-audit --no-fund --loglevel=error \
        "speedscope@$SPEEDSCOPE_VERSION" "playwright-core@$PLAYWRIGHT_CORE_VERSION" >&2
fi

shots=$(mktemp -d /tmp/speedscope-shots.XXXXXX)
rc=0
SPEEDSCOPE_DIST="$VIEWER_DIR/node_modules/speedscope/dist/release" \
PLAYWRIGHT_CORE="$VIEWER_DIR/node_modules/playwright-core" \
CHROMIUM="$CHROMIUM" \
    node "$here/speedscope_check.mjs" "$trace" "$shots/track" || rc=$?
if [ -f "$shots/track.png" ]; then
    cp "$shots/track.png" "$out"
    echo "screenshot: $out (one per track: $shots/track-N.png)"
fi
exit $rc
