package docgen

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// The release archives and Linux packages carry the man pages and completions Write generates
// (issue 25: they were generated but not installed). goreleaser.yaml runs gen-docs into build/
// before it packs; every generated file must match a glob of the archives, every man page one of
// the packages' (installed under /usr/share/man/man1), and each completion script its shell's.
func TestReleaseShipsWhatWriteGenerates(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "goreleaser.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Before   struct{ Hooks []string }
		Archives []struct {
			Files []yaml.Node
		}
		Nfpms []struct {
			Contents []struct{ Src, Dst string }
		}
	}
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(cfg.Before.Hooks, "go run ./cmd/gen-docs -out build") {
		t.Fatalf("no before hook runs gen-docs into build/: %q", cfg.Before.Hooks)
	}
	dir := t.TempDir()
	files, err := Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	var archiveGlobs []string
	for _, a := range cfg.Archives {
		for _, f := range a.Files {
			var src struct{ Src string }
			if f.Kind == yaml.ScalarNode {
				archiveGlobs = append(archiveGlobs, f.Value)
			} else if f.Decode(&src) == nil {
				archiveGlobs = append(archiveGlobs, src.Src)
			}
		}
	}
	matches := func(globs []string, rel string) bool {
		for _, g := range globs {
			if ok, _ := filepath.Match(g, rel); ok {
				return true
			}
		}
		return false
	}
	installs := map[string]string{} // glob → where the package puts it
	var pkgGlobs []string
	for _, n := range cfg.Nfpms {
		for _, c := range n.Contents {
			installs[c.Src] = c.Dst
			pkgGlobs = append(pkgGlobs, c.Src)
		}
	}
	man := 0
	for _, f := range files {
		r, err := filepath.Rel(dir, f)
		if err != nil {
			t.Fatal(err)
		}
		rel := filepath.ToSlash(filepath.Join("build", r))
		if !matches(archiveGlobs, rel) {
			t.Errorf("%s is generated but in no archive (files: %q)", rel, archiveGlobs)
		}
		if strings.HasSuffix(rel, ".ps1") {
			continue // Windows: the archive only
		}
		if !matches(pkgGlobs, rel) {
			t.Errorf("%s is generated but the Linux packages do not install it", rel)
		}
		if strings.HasPrefix(rel, "build/man/") {
			man++
		}
	}
	if man < 10 {
		t.Errorf("%d man pages generated, want one per command and help topic", man)
	}
	if dst := installs["build/man/*.1"]; dst != "/usr/share/man/man1/" {
		t.Errorf("man pages installed in %q, want /usr/share/man/man1/", dst)
	}
}
