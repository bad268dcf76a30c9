package recovery_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/recovery"
)

// TestGoldenReasons reads every recovery golden: a failing restart has a
// Reason from the closed set recovery.Reasons, a resume has none, and every
// Reason is exercised by some golden. A failure names its file unless its
// reason is about no single file.
func TestGoldenReasons(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no goldens: %v", err)
	}
	seen := map[string]bool{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var r recovery.Result
		if err := json.Unmarshal(data, &r); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		switch {
		case r.Failed() && !slices.Contains(recovery.Reasons, r.Reason):
			t.Errorf("%s: failing restart with reason %q, not in recovery.Reasons", f, r.Reason)
		case !r.Failed() && (r.Reason != "" || r.FailedFile != ""):
			t.Errorf("%s: resume with reason %q, file %q", f, r.Reason, r.FailedFile)
		case r.Failed() && r.FailedFile == "" && r.Reason != recovery.ReasonEmptyOffsetsWithCommits:
			t.Errorf("%s: %s failure names no file", f, r.Reason)
		}
		// The in-memory check: Reason and FailedFile survive a JSON round trip
		// under their documented names.
		if r.Failed() && !strings.Contains(string(data), `"reason": "`+r.Reason+`"`) {
			t.Errorf("%s: reason not rendered as \"reason\"", f)
		}
		seen[r.Reason] = true
	}
	for _, reason := range recovery.Reasons {
		if !seen[reason] {
			t.Errorf("reason %s appears in no golden: add a scenario to internal/scenario", reason)
		}
	}
}

func TestCheckVersion(t *testing.T) {
	for _, c := range []struct {
		spark   string
		log     recovery.LogKind
		version int
		cf      int
		want    string // "" = readable; else a substring of the error
	}{
		{"3.5", recovery.LogOffsets, 1, 0, ""},
		{"3.5", recovery.LogOffsets, 2, 0, "UnsupportedLogVersion: maximum supported log version is v1, but encountered v2. The log file was produced by a newer version of Spark and cannot be read by this version. Please upgrade."},
		{"4.0", recovery.LogOffsets, 2, 0, "[INVALID_LOG_VERSION.MAX_SUPPORTED_VERSION] UnsupportedLogVersion. The maximum supported log version is v1, but encountered v2. The log file was produced by a newer version of Spark and cannot be read by this version. You need to upgrade. SQLSTATE: KD002"},
		{"master", recovery.LogOffsets, 2, 0, ""},
		{"4.2", recovery.LogOffsets, 3, 0, "maximum supported log version is v2, but encountered v3"},
		// 4.1 as released reads offsets v1 only (OffsetMap is 4.2).
		{"4.1", recovery.LogOffsets, 2, 0, "The maximum supported log version is v1, but encountered v2."},
		{"4.2.0", recovery.LogOffsets, 2, 0, ""},
		{"", recovery.LogCommits, 1, 0, ""},
		{"3.5.1", recovery.LogCommits, 2, 0, "UnsupportedLogVersion: maximum supported log version is v1, but encountered v2."},
		{"2.4", recovery.LogCommits, 2, 0, "maximum supported log version is v1"},
		{"2.1", recovery.LogCommits, 7, 0, ""}, // no commit log
		{"4.0", recovery.LogCommits, 1, 0, ""},
		{"4.0", recovery.LogCommits, 2, 0, "[INVALID_LOG_VERSION.EXACT_MATCH_VERSION] UnsupportedLogVersion. The only supported log version is v1, but encountered v2. SQLSTATE: KD002"},
		{"4.0", recovery.LogCommits, 2, 2, ""},
		{"4.0", recovery.LogCommits, 1, 2, "The only supported log version is v2, but encountered v1."},
		// 4.1 keeps 4.0's exact-match rule; 4.2 reads v1..v3 whatever the setting (SPARK-56970).
		{"4.1", recovery.LogCommits, 2, 0, "The only supported log version is v1, but encountered v2."},
		{"4.1", recovery.LogCommits, 2, 2, ""},
		{"4.2", recovery.LogCommits, 2, 0, ""},
		{"4.2", recovery.LogCommits, 1, 2, ""},
		{"4.2", recovery.LogCommits, 3, 0, ""},
		{"master", recovery.LogCommits, 3, 0, ""},
		{"4.2", recovery.LogCommits, 4, 0, "maximum supported log version is v3, but encountered v4"},
		{"3.5", recovery.LogKafkaInitialOffsets, 99999, 0, "maximum supported log version is v1, but encountered v99999"},
		{"3.5", recovery.LogFileSink, 1, 0, ""},
		{"4.1", recovery.LogFileSource, 2, 0, "maximum supported log version is v1"},
	} {
		err := recovery.CheckVersion(c.spark, c.log, c.version, c.cf)
		var ve *recovery.VersionError
		switch {
		case c.want == "" && err != nil:
			t.Errorf("CheckVersion(%q, %s, v%d, cf%d) = %v, want nil", c.spark, c.log, c.version, c.cf, err)
		case c.want != "" && (!errors.As(err, &ve) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("CheckVersion(%q, %s, v%d, cf%d) = %v, want a VersionError with %q", c.spark, c.log, c.version, c.cf, err, c.want)
		}
	}
	ve := &recovery.VersionError{}
	err := recovery.CheckVersion("3.5", recovery.LogCommits, 2, 0)
	if !errors.As(err, &ve) || ve.Version != 2 || ve.Supported != 1 || ve.ExactMatch ||
		ve.SparkError("file:/ckpt/commits/3") != "java.lang.IllegalStateException: Failed to read log file file:/ckpt/commits/3. "+err.Error() {
		t.Errorf("VersionError %+v, SparkError %q", ve, ve.SparkError("file:/ckpt/commits/3"))
	}
	for _, bad := range []struct {
		spark   string
		log     recovery.LogKind
		version int
		cf      int
	}{{"1.6", recovery.LogOffsets, 1, 0}, {"3.5", "state", 1, 0}, {"3.5", recovery.LogOffsets, 0, 0}, {"3.5", recovery.LogCommits, 1, 9}} {
		err := recovery.CheckVersion(bad.spark, bad.log, bad.version, bad.cf)
		if err == nil || errors.As(err, &ve) {
			t.Errorf("CheckVersion(%+v) = %v, want an argument error", bad, err)
		}
	}
}
