// Package docgen writes ckpt's shell completions and man pages from its command tree, with
// cobra's generators (cmd/gen-docs, run by the release build).
package docgen

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/ckpt-dev/ckpt/internal/cli"
	"github.com/ckpt-dev/ckpt/internal/cmd/root"
	"github.com/ckpt-dev/ckpt/internal/iostreams"
)

// Command returns the root command as the binary builds it, for the generators.
func Command() *cobra.Command {
	io, _, _, _ := iostreams.Test()
	env := &cli.Env{IO: io, Version: "dev", Now: time.Now, Getenv: os.Getenv}
	cmd := root.NewCmd(env)
	// Cobra adds these two when the command runs; the man pages and completions list them.
	cmd.InitDefaultHelpCmd()
	cmd.InitDefaultCompletionCmd()
	cmd.DisableAutoGenTag = true
	return cmd
}

// Write writes completions/ckpt.{bash,zsh,fish,ps1} and man/*.1 (a page per command and per
// help topic) below dir and returns the
// files written, sorted.
func Write(dir string) ([]string, error) {
	cmd := Command()
	comp := filepath.Join(dir, "completions")
	man := filepath.Join(dir, "man")
	for _, d := range []string{comp, man} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	gens := map[string]func(string) error{
		"ckpt.bash": func(p string) error { return cmd.GenBashCompletionFileV2(p, true) },
		"ckpt.zsh":  cmd.GenZshCompletionFile,
		"ckpt.fish": func(p string) error { return cmd.GenFishCompletionFile(p, true) },
		"ckpt.ps1":  cmd.GenPowerShellCompletionFileWithDesc,
	}
	for name, gen := range gens {
		if err := gen(filepath.Join(comp, name)); err != nil {
			return nil, fmt.Errorf("completion %s: %w", name, err)
		}
	}
	hdr := &doc.GenManHeader{Title: "CKPT", Section: "1", Source: "ckpt", Manual: "ckpt manual"}
	if err := doc.GenManTree(cmd, hdr, man); err != nil {
		return nil, fmt.Errorf("man pages: %w", err)
	}
	// The help topics (ckpt help environment, …) get pages too: GenManTree skips them.
	for _, c := range cmd.Commands() {
		if !c.IsAdditionalHelpTopicCommand() {
			continue
		}
		f, err := os.Create(filepath.Join(man, "ckpt-"+c.Name()+".1"))
		if err != nil {
			return nil, err
		}
		err = doc.GenMan(c, hdr, f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, fmt.Errorf("man page of %s: %w", c.Name(), err)
		}
	}
	var files []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return err
	})
	sort.Strings(files)
	return files, err
}
