// Command ckpt inspects, diagnoses, repairs and runs Apache Spark Structured Streaming checkpoints.
package main

import (
	"os"

	"github.com/ckpt-dev/ckpt/internal/cmd/root"
)

// version, commit and date are set by the release build (goreleaser.yaml:
// -ldflags "-X main.version=... -X main.commit=... -X main.date=...").
var (
	version = "dev"
	commit  = ""
	date    = ""
)

func main() { os.Exit(root.Main(version, commit, date)) }
