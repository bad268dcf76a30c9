package replay

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/exitcode"
	"github.com/ckpt-dev/ckpt/internal/iostreams"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/render"
	"github.com/ckpt-dev/ckpt/internal/scenario"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

func runOn(t *testing.T, name string, mutate func(*Options)) (string, error) {
	t.Helper()
	ctx := context.Background()
	s, ok := scenario.Get(name)
	if !ok {
		t.Fatalf("no scenario %s", name)
	}
	st, forget, err := s.Mem(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer forget()
	io, _, out, _ := iostreams.Test()
	opts := &Options{
		IO:        io,
		OpenStore: func(context.Context, string) (storage.Store, error) { return st, nil },
		Location:  name,
		Output:    render.FormatTable,
	}
	if mutate != nil {
		mutate(opts)
	}
	err = runReplay(ctx, opts)
	return out.String(), err
}

func TestRunReplayExitCodes(t *testing.T) {
	out, err := runOn(t, "rerun-last", nil)
	if err != nil {
		t.Fatalf("resume returned %v", err)
	}
	if !strings.HasPrefix(out, "Restart re-runs batch 7, then continues at batch 8\n") {
		t.Errorf("verdict not first:\n%s", out)
	}
	out, err = runOn(t, "async-trap-0-3-7", nil)
	if exitcode.Code(err) != exitcode.Findings || exitcode.Message(err) != "" {
		t.Errorf("failed restart: code %d message %q, want 3 and nothing more", exitcode.Code(err), exitcode.Message(err))
	}
	if !strings.Contains(out, "Next: ckpt doctor async-trap-0-3-7") {
		t.Errorf("no next step:\n%s", out)
	}
	_, err = runOn(t, "rerun-last", func(o *Options) { o.Mode = recovery.ModeAsync; o.SparkVersion = "3.3" })
	if exitcode.Code(err) != exitcode.Usage {
		t.Errorf("async on 3.3: code %d, want 2 (%v)", exitcode.Code(err), err)
	}
}

func TestRunReplayJSON(t *testing.T) {
	out, err := runOn(t, "missing-previous-offsets", func(o *Options) { o.Output = render.FormatJSON })
	if exitcode.Code(err) != exitcode.Findings {
		t.Fatalf("code %d", exitcode.Code(err))
	}
	var res recovery.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if res.Outcome != "fail" || res.ErrorText() != "batch 4 doesn't exist" || res.NextBatch != -1 {
		t.Errorf("result %+v", res)
	}
	for _, key := range []string{`"outcome"`, `"error"`, `"nextBatch"`, `"rerunBatch"`, `"rerunRange"`, `"skipped"`, `"warnings"`, `"watermarkMs"`, `"batchTimestampMs"`} {
		if !strings.Contains(out, key) {
			t.Errorf("JSON lacks %s", key)
		}
	}
}

// The chain as Spark throws it: the exception the query fails with (what Spark's driver logs),
// its root cause, and the error class, as Spark 4.1.1 reported them for kafka-initial-future-version
// (testdata/spark-oracle/4.1.1).
func TestRunReplayRootCause(t *testing.T) {
	out, err := runOn(t, "kafka-initial-future-version", func(o *Options) { o.Output = render.FormatJSON; o.SparkVersion = "4.1" })
	if exitcode.Code(err) != exitcode.Findings {
		t.Fatalf("code %d", exitcode.Code(err))
	}
	var res recovery.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if res.Exception != "java.lang.IllegalStateException" || !strings.HasPrefix(res.ErrorText(), "Failed to read log file ") ||
		res.RootCause == nil || res.RootCause.Exception != "org.apache.spark.SparkIllegalStateException" ||
		!strings.HasPrefix(res.RootCause.Error, "[INVALID_LOG_VERSION.MAX_SUPPORTED_VERSION] UnsupportedLogVersion.") ||
		res.ErrorClass != "INVALID_LOG_VERSION.MAX_SUPPORTED_VERSION" || !strings.Contains(out, `"errorClass": "INVALID_LOG_VERSION.MAX_SUPPORTED_VERSION"`) {
		t.Errorf("chain: %s %q, root %+v, class %q", res.Exception, res.ErrorText(), res.RootCause, res.ErrorClass)
	}
	out, _ = runOn(t, "corrupt-latest-commit-empty", func(o *Options) { o.SparkVersion = "3.5" })
	if !strings.Contains(out, "Restart will FAIL: java.lang.IllegalStateException: Failed to read log file ") ||
		!strings.Contains(out, "root cause:") || !strings.Contains(out, "java.lang.IllegalStateException: Incomplete log file in the offset commit log") ||
		strings.Contains(out, "error class:") {
		t.Errorf("table:\n%s", out)
	}
}

func TestRanges(t *testing.T) {
	if got := ranges([]int64{1, 2, 3, 5, 7, 8}); got != "1..3, 5, 7..8" {
		t.Errorf("ranges = %q", got)
	}
	if got := versions([]string{"2.2", "2.3", "2.4", "4.1"}); got != "2.2–2.4, 4.1" {
		t.Errorf("versions = %q", got)
	}
}
