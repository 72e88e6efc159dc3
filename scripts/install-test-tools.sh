#!/usr/bin/env bash
# What the tests need from Debian's packages, when missing: headless Chromium for the report
# test (tests/it/report_browser.rs) and printing test PDFs, and poppler-utils (pdftohtml) for
# reading PDF documents, pandoc for converting the statute to HTML, DOCX and reStructuredText
# (tests/it/formats.rs), Slurm with munge for the one-node cluster of tests/it/slurm.rs, and
# Lucene 8.7 with Jackson for the stand-in OpenSearch node of tests/it/engine_opensearch.rs
# (scripts/lucene-node; javac comes with the image).
# Needs apt (and root, or sudo) the first time. Without the packages' recommendations (Slurm's
# metapackage and Chromium's pull in some 140 more, plugins and desktop services the tests never
# start): 38 packages in 11 s instead of 178 in about 50 s.
set -euo pipefail
missing=()
command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || missing+=(chromium)
command -v pdftohtml >/dev/null 2>&1 || missing+=(poppler-utils)
command -v pandoc >/dev/null 2>&1 || missing+=(pandoc)
command -v slurmctld >/dev/null 2>&1 || missing+=(slurmctld slurmd slurm-client)
command -v munged >/dev/null 2>&1 || missing+=(munge)
[ -f /usr/share/java/lucene-core-8.7.0.jar ] || missing+=(liblucene8-java)
[ -f /usr/share/java/jackson-databind.jar ] || missing+=(libjackson2-databind-java)
if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi
sudo_if_needed() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
echo "installing ${missing[*]} (Debian packages) for the tests" >&2
sudo_if_needed apt-get update -q >/dev/null
DEBIAN_FRONTEND=noninteractive sudo_if_needed apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
command -v chromium >/dev/null
command -v pdftohtml >/dev/null
command -v pandoc >/dev/null
command -v slurmctld >/dev/null
command -v munged >/dev/null
[ -f /usr/share/java/lucene-core-8.7.0.jar ]
[ -f /usr/share/java/jackson-databind.jar ]
