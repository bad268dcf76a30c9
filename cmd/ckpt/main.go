// Command ckpt inspects, diagnoses, repairs and runs Apache Spark Structured Streaming checkpoints.
package main

import (
	"os"

	"github.com/ckpt-dev/ckpt/internal/cmd/root"
)

// version is set by the release build (-ldflags "-X main.version=...").
var version = "dev"

func main() { os.Exit(root.Main(version)) }
