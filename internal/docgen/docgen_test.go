package docgen

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The release archives ship what Write generates: four completion scripts and a man page per
// command, from the command tree the binary runs.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	files, err := Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	read := func(rel string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, rel))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for rel, want := range map[string]string{
		"completions/ckpt.bash":  "__start_ckpt",
		"completions/ckpt.zsh":   "#compdef ckpt",
		"completions/ckpt.fish":  "complete -c ckpt",
		"completions/ckpt.ps1":   "Register-ArgumentCompleter",
		"man/ckpt.1":             `.TH "CKPT" "1"`,
		"man/ckpt-doctor.1":      `\fB--fail-on\fP`,
		"man/ckpt-repair-undo.1": `\fB--dry-run\fP`,
		"man/ckpt-version.1":     "ckpt version",
		"man/ckpt-environment.1": "CKPT_BOOTSTRAP_SERVERS",
		"man/ckpt-exit-codes.1":  "usage error",
		"man/ckpt-config.1":      "current-context: prod",
		"man/ckpt-repair-list.1": "ckpt repair list",
	} {
		if got := read(rel); !strings.Contains(got, want) {
			t.Errorf("%s does not contain %q", rel, want)
		}
	}
	// The S3 flags only where storage is read (man pages list inherited flags too).
	if strings.Contains(read("man/ckpt-version.1"), `--s3-endpoint`) {
		t.Error("ckpt-version.1 lists --s3-endpoint")
	}
	if !strings.Contains(read("man/ckpt-repair-undo.1"), `--s3-endpoint`) {
		t.Error("ckpt-repair-undo.1 does not list --s3-endpoint")
	}
	if len(files) < 4+15 {
		t.Errorf("%d files written: %v", len(files), files)
	}
}
