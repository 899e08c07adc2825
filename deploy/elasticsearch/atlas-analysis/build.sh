#!/usr/bin/env bash
# Build the atlas-analysis plugin zip against an unpacked Elasticsearch distribution.
# usage: build.sh ES_HOME JAVA_HOME OUT_ZIP
set -euo pipefail
es_home=$1 java_home=$2 out=$3
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
es_version=$(basename "$(ls "$es_home"/lib/elasticsearch-[0-9]*.jar)" .jar | sed 's/^elasticsearch-//')
mkdir -p "$work/classes" "$work/zip"
"$java_home/bin/javac" --release 21 -nowarn -cp "$es_home/lib/*" -d "$work/classes" \
    $(find "$here/src" -name '*.java')
"$java_home/bin/jar" --create --file "$work/zip/atlas-analysis.jar" -C "$work/classes" .
cat > "$work/zip/plugin-descriptor.properties" <<PROPS
description=Analysis components Atlas needs on distributions without analysis-common
version=1.0.0
name=atlas-analysis
classname=org.atlas.es.analysis.AtlasAnalysisPlugin
java.version=21
elasticsearch.version=$es_version
PROPS
(cd "$work/zip" && "$java_home/bin/jar" --create --no-manifest --file "$out" .)
echo "built $out for Elasticsearch $es_version"
