package version

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	vcs := []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.time", Value: "2026-11-30T10:00:00Z"}, {Key: "vcs.modified", Value: "true"}}
	for _, tc := range []struct {
		name                  string
		version, commit, date string
		bi                    *debug.BuildInfo
		want                  Info
		line                  string
	}{
		{"release (ldflags)", "1.4.0", "fedcba9876543210fedc", "2026-12-01T08:00:00Z", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs},
			Info{Version: "1.4.0", Commit: "fedcba9876543210fedc", Date: "2026-12-01T08:00:00Z"}, "ckpt 1.4.0 (commit fedcba987654, built 2026-12-01T08:00:00Z; "},
		{"go install @v1.4.0", "dev", "", "", &debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}},
			Info{Version: "v1.4.0"}, "ckpt v1.4.0 (commit unknown, built unknown; "},
		{"go build in a clone", "dev", "", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs},
			Info{Version: "dev", Commit: "0123456789abcdef0123", Date: "2026-11-30T10:00:00Z", Modified: true}, "ckpt dev (commit 0123456789ab+modified, built 2026-11-30T10:00:00Z; "},
		{"no build info", "", "", "", nil, Info{Version: "dev"}, "ckpt dev (commit unknown, built unknown; go"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Resolve(tc.version, tc.commit, tc.date, tc.bi, tc.bi != nil)
			if got.Version != tc.want.Version || got.Commit != tc.want.Commit || got.Date != tc.want.Date || got.Modified != tc.want.Modified {
				t.Errorf("Resolve = %+v, want %+v", got, tc.want)
			}
			if got.Go == "" || got.OS == "" || got.Arch == "" {
				t.Errorf("no toolchain or platform: %+v", got)
			}
			if !strings.HasPrefix(got.Line(), tc.line) {
				t.Errorf("Line = %q, want prefix %q", got.Line(), tc.line)
			}
		})
	}
}
