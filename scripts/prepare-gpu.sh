#!/usr/bin/env bash
# Prepare .gl/ for a run on the GPU machine (no package registry there):
# the shared prepare step, plus cJSON, plus a snapshot of the committed tree
# in .gl/src (so a run builds exactly what is committed).
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
shared=${VKPROF_SHARED:-../shared}
"$shared/device/prepare.sh"
o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'
(cd .gl && apt-get $o download libcjson1 libcjson-dev >/dev/null 2>&1)
rm -rf .gl/src && mkdir -p .gl/src
git archive HEAD | tar -x -C .gl/src
echo "prepare-gpu: .gl/ ready ($(du -sh .gl | cut -f1)); snapshot of $(git rev-parse --short HEAD) in .gl/src"
