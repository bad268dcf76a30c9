package config

import (
	"os"
	"path/filepath"
	"testing"
)

func TestPath(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"CKPT_CONFIG": "/etc/ckpt.yaml", "XDG_CONFIG_HOME": "/x", "HOME": "/h"}, "/etc/ckpt.yaml"},
		{map[string]string{"XDG_CONFIG_HOME": "/x", "HOME": "/h"}, "/x/ckpt/config.yaml"},
		{map[string]string{"HOME": "/h"}, "/h/.config/ckpt/config.yaml"},
	} {
		if got := Path(env(c.env)); got != c.want {
			t.Errorf("Path(%v) = %q, want %q", c.env, got, c.want)
		}
	}
}

func TestLoadMissingAndEmpty(t *testing.T) {
	dir := t.TempDir()
	if f, err := Load(filepath.Join(dir, "none.yaml")); err != nil || len(f.Contexts) != 0 {
		t.Fatalf("missing file: %v %v", f, err)
	}
	p := filepath.Join(dir, "empty.yaml")
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(p); err != nil {
		t.Fatalf("empty file: %v", err)
	}
}
