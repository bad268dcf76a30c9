package scenario_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/scenario"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

var validName = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]*$`)

func TestScenariosBuild(t *testing.T) {
	all := scenario.All()
	if len(all) < 40 {
		t.Fatalf("only %d scenarios registered", len(all))
	}
	for _, s := range all {
		if !validName.MatchString(s.Name) || s.Doc == "" {
			t.Errorf("scenario %q: bad name or no Doc", s.Name)
		}
		st, forget, err := s.Mem(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		forget()
		_ = st
		// Builds are deterministic.
		a, b := s.Files(), s.Files()
		if len(a) != len(b) {
			t.Errorf("%s: non-deterministic build", s.Name)
		}
		for p, d := range a {
			if !bytes.Equal(d, b[p]) {
				t.Errorf("%s: %s differs between two builds", s.Name, p)
			}
		}
	}
}

// TestBuilderBytes pins the bytes the builder writes to Spark's layout.
func TestBuilderBytes(t *testing.T) {
	b := scenario.NewBuilder("bytes")
	b.Offsets(3, scenario.Kafka("t", 3, 2), scenario.FileSource(9), scenario.Void)
	got := string(b.Files()["offsets/3"])
	if !strings.HasPrefix(got, "v1\n{\"batchWatermarkMs\":0,\"batchTimestampMs\":1733000180000,\"conf\":{\"spark.sql.streaming.stateStore.providerClass\":") ||
		!strings.HasSuffix(got, "}}\n{\"t\":{\"0\":40,\"1\":44}}\n{\"logOffset\":9}\n-") {
		t.Errorf("offsets bytes:\n%q", got)
	}
	seq, err := logformat.ParseOffsets("offsets/3", []byte(got))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(seq.Marshal(), []byte(got)) {
		t.Errorf("parse→marshal is not the identity")
	}
	b.Commit(3)
	if c := string(b.Files()["commits/3"]); c != "v1\n{\"nextBatchWatermarkMs\":0}" {
		t.Errorf("commit bytes %q", c)
	}
	b.KafkaInitial(0, scenario.KafkaOffsets("t", 0, 0))
	ini, err := logformat.ParseKafkaInitialOffsets("sources/0/0", b.Files()["sources/0/0"])
	if err != nil || ini.Version != 1 || ini.Lead != 0 {
		t.Errorf("initial offsets: %+v %v", ini, err)
	}
	b.Metadata()
	if m, err := logformat.ParseStreamMetadata("metadata", b.Files()["metadata"]); err != nil || m.ID != b.QueryID() || len(m.ID) != 36 {
		t.Errorf("metadata: %+v %v", m, err)
	}
}

// TestGeneratedTree checks that testdata/scenarios is what
// `go run ./internal/scenario/gen` writes today: every scenario not marked
// Large byte for byte, no directory for a Large or unregistered scenario,
// and the index.
func TestGeneratedTree(t *testing.T) {
	root := filepath.Join("..", "..", "testdata", "scenarios")
	ctx := context.Background()
	known := map[string]bool{}
	for _, s := range scenario.All() {
		known[s.Name] = true
		dir := filepath.Join(root, s.Name)
		if s.Large {
			if _, err := os.Stat(dir); err == nil {
				t.Errorf("%s is Large (built in memory only) but %s exists (run go run ./internal/scenario/gen)", s.Name, dir)
			}
			continue
		}
		want := s.Files()
		st, err := storage.NewLocal(dir)
		if err != nil {
			t.Fatal(err)
		}
		have, err := st.Walk(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		if len(have) != len(want) {
			t.Errorf("%s: %d files on disk, %d in the scenario (run go run ./internal/scenario/gen)", s.Name, len(have), len(want))
			continue
		}
		for _, e := range have {
			d, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(e.Path)))
			if err != nil {
				t.Fatal(err)
			}
			if w, ok := want[e.Path]; !ok || !bytes.Equal(d, w) {
				t.Errorf("%s/%s is stale (run go run ./internal/scenario/gen)", s.Name, e.Path)
			}
		}
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() && !known[e.Name()] {
			t.Errorf("%s belongs to no registered scenario: delete it", filepath.Join(root, e.Name()))
		}
	}
	index, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil || string(index) != scenario.Index() {
		t.Errorf("%s is stale (run go run ./internal/scenario/gen): %v", filepath.Join(root, "README.md"), err)
	}
}

// TestCommittedSize keeps testdata/scenarios small: a scenario above the
// size limits must be marked Large (built in memory only), and a Large one
// must be above them.
func TestCommittedSize(t *testing.T) {
	for _, s := range scenario.All() {
		files := s.Files()
		size := 0
		for _, d := range files {
			size += len(d)
		}
		big := len(files) > scenario.MaxCommittedFiles || size > scenario.MaxCommittedBytes
		switch {
		case big && !s.Large:
			t.Errorf("%s has %d files, %d bytes: above the limits (%d files, %d bytes) for testdata/scenarios; mark it Large",
				s.Name, len(files), size, scenario.MaxCommittedFiles, scenario.MaxCommittedBytes)
		case !big && s.Large:
			t.Errorf("%s is marked Large but has only %d files, %d bytes: commit it", s.Name, len(files), size)
		}
	}
}
