package root

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/lipgloss"

	"github.com/ckpt-dev/ckpt/internal/cli"
	"github.com/ckpt-dev/ckpt/internal/iostreams"
)

func helpAt(t *testing.T, columns string, args ...string) string {
	t.Helper()
	ios, _, out, _ := iostreams.Test()
	ios.SetGetenv(func(k string) string {
		if k == "COLUMNS" {
			return columns
		}
		return ""
	})
	env := &cli.Env{IO: ios, Version: "dev", Now: time.Now, Getenv: func(string) string { return "" }}
	if code := Execute(context.Background(), env, args); code != 0 {
		t.Fatalf("%v: exit %d", args, code)
	}
	return out.String()
}

// doctor --help had 40 of 70 lines over 80 columns (the longest 218), its descriptions starting
// at column 52: the terminal broke them mid-word. At 80 columns, and at 80 when piped (COLUMNS
// unset, as gh), every line fits but an example command or a single word longer than the line.
func TestHelpWrapsAtTheWidth(t *testing.T) {
	for _, cols := range []string{"80", ""} {
		for _, cmd := range [][]string{{"doctor", "--help"}, {"lag", "--help"}, {"repair", "--help"}, {"--help"}} {
			out := helpAt(t, cols, cmd...)
			examples := false
			for _, line := range strings.Split(out, "\n") {
				switch {
				case line == "Examples:":
					examples = true
				case line == "" || !strings.HasPrefix(line, " "):
					examples = false
				}
				w := lipgloss.Width(line)
				if w <= 80 || examples || len(strings.Fields(line)) == 1 || strings.HasPrefix(strings.TrimSpace(line), "--") && len(strings.Fields(line)) <= 3 {
					continue
				}
				// A long unbreakable word (a conf key) after the flag column is allowed.
				f := strings.Fields(line)
				if lipgloss.Width(f[len(f)-1]) > 40 {
					continue
				}
				t.Errorf("COLUMNS=%q %v: line of %d cells:\n%s", cols, cmd, w, line)
			}
		}
	}
}

// ckpt help <topic> pages, as gh's: the environment variables, the exit codes, the config file
// (the config command's page) and the locations.
func TestHelpTopics(t *testing.T) {
	for topic, want := range map[string]string{
		"environment": "CKPT_BOOTSTRAP_SERVERS",
		"exit-codes":  "usage error",
		"config":      "current-context: prod",
		"locations":   "abfss://",
	} {
		if out := helpAt(t, "", "help", topic); !strings.Contains(out, want) {
			t.Errorf("ckpt help %s lacks %q:\n%s", topic, want, out)
		}
	}
	if out := helpAt(t, "", "--help"); !strings.Contains(out, "Additional help topics:") || !strings.Contains(out, "ckpt environment") {
		t.Errorf("root help does not list the topics:\n%s", out)
	}
}
