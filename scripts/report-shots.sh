#!/usr/bin/env bash
# Screenshots of report.html for the docs: the SciFact 12-cell grid (experiments/scifact-report.toml)
# rendered by headless Chromium, one PNG per section, written to docs/img/ (shrunk to 256 colours
# when ImageMagick is there). Needs scripts/install-test-tools.sh (Chromium).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
out=$(mktemp -d)
./target/release/ragsweep run -q --out "$out" experiments/scifact-report.toml >/dev/null 2>"$out/run.log" || { cat "$out/run.log" >&2; exit 1; }
page=$(readlink -f "$out/scifact-report/latest")/report.html
mkdir -p docs/img
for shot in plots:1150 grid:430 matrix:560; do
  section=${shot%:*}
  chromium --headless=new --no-sandbox --disable-gpu --hide-scrollbars --virtual-time-budget=5000 \
    --window-size=1280,${shot#*:} --screenshot="docs/img/report-$section.png" "file://$page#$section" 2>/dev/null
  if convert -version 2>/dev/null | grep -q ImageMagick; then convert "docs/img/report-$section.png" -trim -colors 256 "docs/img/report-$section.png"; fi
done
ls -l docs/img/report-*.png
