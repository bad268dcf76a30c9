// Command gen writes every registered scenario to testdata/scenarios/<name>/
// (replacing what is there) and an index, for the CLI tests:
//
//	go run ./internal/scenario/gen [-out testdata/scenarios]
//
// Scenarios marked Large are not written (tests build them in memory), and
// a directory left from an earlier run of a scenario now Large is removed.
// The output is deterministic; CI checks that the committed tree matches.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ckpt-dev/ckpt/internal/scenario"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

func main() {
	out := flag.String("out", filepath.Join("testdata", "scenarios"), "directory to write the scenarios into")
	flag.Parse()
	if err := run(context.Background(), *out); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out string) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	for _, s := range scenario.All() {
		dir := filepath.Join(out, s.Name)
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
		if s.Large {
			continue
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		st, err := storage.NewLocal(dir)
		if err != nil {
			return err
		}
		if err := s.WriteTo(ctx, st); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(out, "README.md"), []byte(scenario.Index()), 0o644)
}
