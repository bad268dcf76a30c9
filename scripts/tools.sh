#!/usr/bin/env bash
# Installs the tools scripts/test.sh needs beyond Go itself, so that a fresh clone's first run
# does not stop half-way: staticcheck (go install, into .ci/bin); curl and npm are checked, not
# installed (the emulators' readiness probes and Azurite need them; the package manager is the
# machine's business).
# CKPT_TOOLS_BIN overrides the install directory (default .ci/bin).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${CKPT_TOOLS_BIN:-$PWD/.ci/bin}
STATICCHECK=honnef.co/go/tools/cmd/staticcheck@v0.8.2
mkdir -p "$BIN"
export PATH="$BIN:$PATH"

if ! command -v staticcheck >/dev/null; then
  echo "tools.sh: installing $STATICCHECK into $BIN (once)" >&2
  GOBIN="$BIN" go install "$STATICCHECK"
fi
if ! command -v curl >/dev/null; then
  echo "tools.sh: curl is needed (the S3 test server's readiness check): install it (apt-get install curl, brew install curl)" >&2
  exit 1
fi
if [ -z "${CKPT_TEST_AZURE_CONNECTION_STRING:-}" ] && ! command -v npm >/dev/null; then
  echo "tools.sh: npm is needed to install the Azure emulator (Azurite): apt-get install nodejs npm, brew install node" >&2
  exit 1
fi
