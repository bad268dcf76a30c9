package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// scripts/test.sh (the README's test command) installs staticcheck itself when it is missing,
// instead of failing after the slow steps: scripts/tools.sh runs `go install` into .ci/bin. A fake
// `go` records the call, so the test needs no network.
func TestToolsInstallStaticcheck(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Fatal("scripts/test.sh needs bash")
	}
	fake := t.TempDir()
	bin := t.TempDir()
	log := filepath.Join(fake, "go.log")
	script := "#!/bin/sh\necho \"GOBIN=$GOBIN $*\" >> " + log + "\n"
	if err := os.WriteFile(filepath.Join(fake, "go"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Fatal("curl is needed by scripts/test.sh")
	}
	if err := os.Symlink(curl, filepath.Join(fake, "curl")); err != nil {
		t.Fatal(err)
	}
	run := func() {
		t.Helper()
		cmd := exec.Command("bash", filepath.Join("..", "..", "scripts", "tools.sh"))
		cmd.Env = []string{"PATH=" + fake + ":/usr/bin:/bin", "CKPT_TOOLS_BIN=" + bin, "HOME=" + t.TempDir(), "CKPT_TEST_AZURE_CONNECTION_STRING=set"}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("tools.sh: %v\n%s", err, out)
		}
	}
	run()
	got, err := os.ReadFile(log)
	if err != nil {
		t.Fatalf("tools.sh did not run go install: %v", err)
	}
	if want := "GOBIN=" + bin + " install honnef.co/go/tools/cmd/staticcheck@v0.8.2"; strings.TrimSpace(string(got)) != want {
		t.Errorf("go was called as %q, want %q", got, want)
	}

	// Installed already: nothing to do.
	if err := os.WriteFile(filepath.Join(bin, "staticcheck"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(log); err != nil {
		t.Fatal(err)
	}
	run()
	if _, err := os.Stat(log); err == nil {
		t.Error("tools.sh ran go although staticcheck is installed")
	}
}
