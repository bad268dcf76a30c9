package root

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/internal/cli"
	"github.com/ckpt-dev/ckpt/internal/iostreams"
)

// One of a thing reads in the singular: a rewind whose re-run reads one Kafka record says
// "(1 Kafka record)" and moves "1 offsets file, 1 commit and 0 state files"; inspect says
// "1 partition". Before, rewind said "1 offsets, 1 commit(s) and 0 state file(s)" and inspect
// "1 partitions".
func TestOneReadsSingular(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"metadata":  `{"id":"8a6ea7b6-6c9b-4a05-a8ef-0e7e2ad1e6d3"}`,
		"commits/0": "v1\n{\"nextBatchWatermarkMs\":0}",
		"commits/1": "v1\n{\"nextBatchWatermarkMs\":0}",
		"commits/2": "v1\n{\"nextBatchWatermarkMs\":0}",
	}
	for i, end := range []int{5, 6, 7} {
		files[fmt.Sprintf("offsets/%d", i)] = fmt.Sprintf("v1\n{\"batchWatermarkMs\":0,\"batchTimestampMs\":%d,\"conf\":{}}\n{\"t\":{\"0\":%d}}", 1700000000000+i, end)
	}
	for p, data := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-time.Hour) // not a live query
	for p := range files {
		_ = os.Chtimes(filepath.Join(dir, p), old, old)
	}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"rewind", dir, "--to-batch", "1"}, []string{"(1 Kafka record)", "move 1 offsets file, 1 commit and 0 state files"}},
		{[]string{"inspect", dir}, []string{"; 1 partition;"}},
	} {
		ios, _, out, errOut := iostreams.Test()
		env := &cli.Env{IO: ios, Version: "test", Now: time.Now, Getenv: os.Getenv}
		if code := Execute(context.Background(), env, c.args); code != 0 && code != 3 {
			t.Fatalf("%v: exit %d\n%s%s", c.args, code, out, errOut)
		}
		for _, w := range c.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%v: no %q in\n%s", c.args, w, out)
			}
		}
		if regexp.MustCompile(`\b1 [a-zA-Z ]*(records|partitions|files|commits)\b|\(s\)`).MatchString(out.String()) {
			t.Errorf("%v: a plural after 1 in\n%s", c.args, out)
		}
	}
}
