package main

import (
	"os"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// goreleaser.yaml runs this command before the build, ships what it writes in every archive,
// and stamps the version, commit and date that `ckpt version` prints.
func TestReleaseConfig(t *testing.T) {
	data, err := os.ReadFile("../../goreleaser.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Before struct {
			Hooks []string `yaml:"hooks"`
		} `yaml:"before"`
		Builds []struct {
			Ldflags []string `yaml:"ldflags"`
		} `yaml:"builds"`
		Archives []struct {
			Files []any `yaml:"files"`
		} `yaml:"archives"`
	}
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(cfg.Before.Hooks, "go run ./cmd/gen-docs -out build") {
		t.Errorf("before hooks %q do not run gen-docs", cfg.Before.Hooks)
	}
	for _, b := range cfg.Builds {
		ld := strings.Join(b.Ldflags, " ")
		for _, v := range []string{"main.version=", "main.commit=", "main.date="} {
			if !strings.Contains(ld, v) {
				t.Errorf("ldflags %q do not set %s", ld, v)
			}
		}
	}
	for _, a := range cfg.Archives {
		var srcs []string
		for _, f := range a.Files {
			if m, ok := f.(map[string]any); ok {
				srcs = append(srcs, m["src"].(string))
			}
		}
		for _, want := range []string{"build/completions/*", "build/man/*"} {
			if !slices.Contains(srcs, want) {
				t.Errorf("archive files %v lack %s", srcs, want)
			}
		}
	}
}
