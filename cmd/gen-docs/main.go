// Command gen-docs writes ckpt's shell completions and man pages, for the release archives
// (goreleaser.yaml runs it as a before hook):
//
//	go run ./cmd/gen-docs -out build
//
// writes build/completions/ckpt.{bash,zsh,fish,ps1} and build/man/ckpt*.1, from the same command
// tree the binary runs (cobra's generators).
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/ckpt-dev/ckpt/internal/docgen"
)

func main() {
	out := flag.String("out", "build", "output `DIR`: completions/ and man/ are written below it")
	flag.Parse()
	files, err := docgen.Write(*out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen-docs:", err)
		os.Exit(1)
	}
	fmt.Printf("gen-docs: %d files in %s\n", len(files), *out)
}
