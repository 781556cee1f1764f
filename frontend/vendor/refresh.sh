#!/usr/bin/env bash
# Refresh the vendored browser libraries from the npm registry, at the pinned versions
# below (edit them to upgrade), and print their checksums for VENDOR.md.
# Usage: frontend/vendor/refresh.sh
set -euo pipefail
MARKED=18.2.1
DOMPURIFY=3.5.0
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
npm pack --silent "marked@$MARKED" "dompurify@$DOMPURIFY" >/dev/null
mkdir marked dompurify
tar xzf "marked-$MARKED.tgz" -C marked --strip-components=1
tar xzf "dompurify-$DOMPURIFY.tgz" -C dompurify --strip-components=1
cp marked/lib/marked.esm.js "$here/marked.esm.js"
cp marked/LICENSE "$here/LICENSE.marked"
cp dompurify/dist/purify.es.mjs "$here/purify.es.mjs"
cp dompurify/LICENSE "$here/LICENSE.dompurify"
cd "$here"
sha256sum marked.esm.js purify.es.mjs
