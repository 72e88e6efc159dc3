#!/usr/bin/env bash
# Compiles (once per source) and runs the Lucene stand-in of an OpenSearch node:
#   scripts/lucene-node/run.sh PORT LOG [--api-key KEY | --basic USER:PASSWORD]
# It prints `listening PORT` when it answers. Needs javac 17+ and Debian's liblucene8-java and
# libjackson2-databind-java (scripts/install-test-tools.sh installs them).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
jars=/usr/share/java
cp="$jars/lucene-core-8.7.0.jar:$jars/lucene-analyzers-common-8.7.0.jar:$jars/lucene-misc-8.7.0.jar:$jars/jackson-core.jar:$jars/jackson-databind.jar:$jars/jackson-annotations.jar"
for jar in ${cp//:/ }; do
    [ -f "$jar" ] || { echo "lucene-node: $jar is missing: run scripts/install-test-tools.sh" >&2; exit 2; }
done
sum=$(sha256sum "$here/LuceneNode.java" | cut -c1-16)
classes="${LUCENE_NODE_CLASSES:-${TMPDIR:-/tmp}/ragsweep-lucene-node}/$sum"
if [ ! -f "$classes/LuceneNode.class" ]; then
    tmp="$classes.tmp.$$"
    mkdir -p "$tmp"
    javac -nowarn -encoding UTF-8 -cp "$cp" -d "$tmp" "$here/LuceneNode.java" 2>&1 | grep -v '^Note:' >&2 || true
    [ -f "$tmp/LuceneNode.class" ] || { echo "lucene-node: javac failed" >&2; exit 2; }
    # Another process may have finished first: its classes are the same.
    mv -T "$tmp" "$classes" 2>/dev/null || rm -rf "$tmp"
fi
exec java -Xss4m -cp "$classes:$cp" LuceneNode "$@"
