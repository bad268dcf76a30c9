package doctor

import (
	"context"
	"strings"
	"testing"
)

// TestUnsupportedLogVersionNamesMigrate: a checkpoint format v2 checkpoint (Spark 4.2.0's)
// checked for Spark 3.5 gets `ckpt migrate --to-spark 3.5` in its unsupported-log-version
// finding; a transformWithState one gets the reason migrate cannot rewrite it instead.
func TestUnsupportedLogVersionNamesMigrate(t *testing.T) {
	for _, c := range []struct {
		fx, to, fix, cmd string
	}{
		{"4.2.0/agg-rocksdb-changelog-v2", "3.5", "to stay on Spark 3.5", "--to-spark 3.5"},
		{"4.2.0/agg-rocksdb-changelog-v2", "4.1", "to stay on Spark 4.1", "--to-spark 4.1"},
		{"4.2.0/tws-changelog-v2", "3.5", "cannot rewrite it for Spark 3.5: operator 0 is transformWithState", ""},
	} {
		dir := copyFixture(t, c.fx)
		rep, err := Run(context.Background(), loadCheckpoint(t, dir), Options{SparkVersion: c.to})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, f := range rep.Findings {
			if f.Code != CodeUnsupportedLogVersion {
				continue
			}
			found = true
			if !strings.Contains(f.Fix, c.fix) {
				t.Errorf("%s for %s: the fix does not say %q: %s", c.fx, c.to, c.fix, f.Fix)
			}
			has := false
			for _, cmd := range f.Commands {
				has = has || strings.HasPrefix(cmd, "ckpt migrate ") && strings.HasSuffix(cmd, c.cmd)
			}
			if has != (c.cmd != "") {
				t.Errorf("%s for %s: commands %q", c.fx, c.to, f.Commands)
			}
		}
		if !found {
			t.Errorf("%s for %s: no %s finding", c.fx, c.to, CodeUnsupportedLogVersion)
		}
	}
}
