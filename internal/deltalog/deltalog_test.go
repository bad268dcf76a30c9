package deltalog

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/storage"
)

const fixtures = "../../testdata/delta"

func open(t *testing.T, rel string) (*Table, storage.Store) {
	t.Helper()
	s, err := storage.NewLocal(filepath.Join(fixtures, rel))
	if err != nil {
		t.Fatal(err)
	}
	tb, err := Read(context.Background(), s, rel)
	if err != nil {
		t.Fatal(err)
	}
	return tb, s
}

// reservoirID is the table id the checkpoint's latest offsets recorded (Spark's own reading of
// the table id).
func reservoirID(t *testing.T, c string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(fixtures, c, "checkpoint/offsets/2"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	var o struct {
		ReservoirID string `json:"reservoirId"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &o); err != nil {
		t.Fatal(err)
	}
	return o.ReservoirID
}

func queryID(t *testing.T, c string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(fixtures, c, "checkpoint/metadata"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct{ ID string }
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m.ID
}

func TestReadSourceTable(t *testing.T) {
	tb, _ := open(t, "source/table")
	if tb.Latest != 3 || tb.EarliestCommit != 0 || len(tb.Commits) != 4 || len(tb.Checkpoints) != 0 {
		t.Fatalf("table %+v", tb)
	}
	if want := reservoirID(t, "source"); tb.ID != want || tb.IDVersion != 0 {
		t.Errorf("id %s at %d, want %s (the offsets' reservoirId) at 0", tb.ID, tb.IDVersion, want)
	}
	for v := int64(0); v <= 3; v++ {
		if !tb.Reconstructable(v) {
			t.Errorf("version %d not reconstructable", v)
		}
	}
	if tb.Reconstructable(4) || tb.Reconstructable(-1) {
		t.Error("versions outside the log reconstructable")
	}
}

// The replaced table has a new id: the one Spark named as the new table in its error.
func TestReadReplacedTable(t *testing.T) {
	tb, _ := open(t, "replaced/table")
	errText, err := os.ReadFile(filepath.Join(fixtures, "replaced/error.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(errText), "unexpected Delta table (id = '"+tb.ID+"')") {
		t.Errorf("table id %s is not the new id in Spark's error:\n%s", tb.ID, errText)
	}
	if old := reservoirID(t, "replaced"); old == tb.ID || !strings.Contains(string(errText), old) {
		t.Errorf("old id %s: same as the table's or not in Spark's error", old)
	}
}

// After cleanup the log starts at the checkpoint: the id comes from the checkpoint parquet.
func TestReadExpiredTable(t *testing.T) {
	tb, _ := open(t, "expired/table")
	if tb.EarliestCommit != 8 || tb.Latest != 8 || len(tb.Checkpoints) != 1 || tb.Checkpoints[0].Version != 8 {
		t.Fatalf("table %+v", tb)
	}
	if tb.LastCheckpoint == nil || tb.LastCheckpoint.Version != 8 {
		t.Errorf("_last_checkpoint %+v", tb.LastCheckpoint)
	}
	if want := reservoirID(t, "expired"); tb.ID != want || tb.IDVersion != 8 {
		t.Errorf("id %s at %d, want %s from the checkpoint at 8", tb.ID, tb.IDVersion, want)
	}
	if first, ok := tb.FirstCommitAtOrAfter(3); !ok || first != 8 {
		t.Errorf("FirstCommitAtOrAfter(3) = %d, %v; Spark said the earliest available version is 8", first, ok)
	}
	if tb.Reconstructable(7) || !tb.Reconstructable(8) {
		t.Error("only version 8 can be rebuilt")
	}
}

func TestSinkTxn(t *testing.T) {
	tb, _ := open(t, "sink/sink")
	q := queryID(t, "sink")
	txn, err := tb.Txn(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	if txn.Version != 2 || txn.TableVersion != 2 || txn.AppID != q {
		t.Errorf("txn %+v, want version 2 (batch 2) at table version 2", txn)
	}
	none, err := tb.Txn(context.Background(), "another-query")
	if err != nil || none.Version != -1 || none.TableVersion != -1 {
		t.Errorf("txn of another query: %+v, %v", none, err)
	}
	// Every STREAMING UPDATE commit names the query and the batch.
	data, err := os.ReadFile(filepath.Join(fixtures, "sink/sink/_delta_log", CommitName(1)))
	if err != nil {
		t.Fatal(err)
	}
	c, err := ParseCommit("1.json", data)
	if err != nil {
		t.Fatal(err)
	}
	if c.CommitInfo == nil || c.CommitInfo.Operation != "STREAMING UPDATE" || c.CommitInfo.Query != q || c.CommitInfo.Epoch != 1 || len(c.Txns) != 1 {
		t.Errorf("commit 1: %+v %+v", c, c.CommitInfo)
	}
}

func TestNoLog(t *testing.T) {
	_, err := Read(context.Background(), storage.NewMem(), "mem")
	if !errors.Is(err, ErrNoLog) {
		t.Fatalf("err = %v, want ErrNoLog", err)
	}
}

func TestParseName(t *testing.T) {
	for name, want := range map[string]Name{
		"00000000000000000007.json":                                                 {Kind: NameCommit, Version: 7},
		"00000000000000000008.checkpoint.parquet":                                   {Kind: NameCheckpoint, Version: 8},
		"00000000000000000010.checkpoint.0000000002.0000000003.parquet":             {Kind: NameCheckpoint, Version: 10, Part: 2, Parts: 3},
		"00000000000000000010.checkpoint.80a083e8-7026-4e79-81be-64bd76c43a11.json": {Kind: NameCheckpoint, Version: 10, V2: true},
		"00000000000000000008.crc":                                                  {Kind: NameChecksum, Version: 8},
		"00000000000000000004.00000000000000000007.compacted.json":                  {Kind: NameCompacted, Version: 4},
		"_last_checkpoint":                                                          {},
		"0000000000000000007.json":                                                  {},
		"00000000000000000007.json.tmp":                                             {},
		"00000000000000000010.checkpoint.0000000004.0000000003.parquet":             {},
	} {
		if got := ParseName(name); got != want {
			t.Errorf("ParseName(%s) = %+v, want %+v", name, got, want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	_, err := ParseCommit("_delta_log/3.json", []byte("{\"txn\":{\"appId\":\"q\",\"version\":1}}\nnot json\n"))
	var e *Error
	if !errors.As(err, &e) || e.Line != 2 || e.File != "_delta_log/3.json" {
		t.Fatalf("err = %v", err)
	}
	if _, err := ParseCommit("c", []byte(`{"txn":{"version":1}}`)); err == nil {
		t.Error("a txn without appId parsed")
	}
	if _, err := ParseLastCheckpoint("l", []byte(`{"size":1}`)); err == nil {
		t.Error("_last_checkpoint without version parsed")
	}
	if _, err := ParseLastCheckpoint("l", []byte(`{"version":8,"size":10,"sizeInBytes":1}`)); err != nil {
		t.Error(err)
	}
	out := &checkpointActions{txns: map[string]int64{}}
	if err := ParseCheckpoint("8.checkpoint.parquet", []byte("PAR1 not parquet PAR1"), out); err == nil {
		t.Error("garbage parsed as a checkpoint")
	}
}

func FuzzParseCommit(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(fixtures, "*/*/_delta_log/*.json"))
	for _, p := range files {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte("{\"commitInfo\":{\"operationParameters\":{\"epochId\":7}}}\n\n{\"metaData\":{\"id\":\"x\"}}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseCommit("f", data)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.File != "f" || e.Expected == "" {
				t.Fatalf("bad error %v", err)
			}
			return
		}
		for _, x := range c.Txns {
			if x.AppID == "" {
				t.Fatal("txn without appId")
			}
		}
		if c.Metadata != nil && c.Metadata.ID == "" {
			t.Fatal("metaData without id")
		}
		_ = ParseName(string(data))
		if lc, err := ParseLastCheckpoint("f", data); err == nil && lc.Version < 0 {
			t.Fatal("negative checkpoint version")
		}
	})
}

func FuzzParseCheckpoint(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(fixtures, "*/*/_delta_log/*.parquet"))
	for _, p := range files {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	if len(files) == 0 {
		f.Fatal("no checkpoint parquet in the fixtures")
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		out := &checkpointActions{txns: map[string]int64{}}
		if err := ParseCheckpoint("f", data, out); err != nil {
			var e *Error
			if !errors.As(err, &e) || e.File != "f" {
				t.Fatalf("bad error %v", err)
			}
		}
	})
}

// The txn and the table id come from the checkpoint parquet when the commits are gone.
func TestSinkTxnFromCheckpoint(t *testing.T) {
	tb, _ := open(t, "sink-checkpoint/sink")
	if len(tb.Commits) != 0 || len(tb.Checkpoints) != 1 || tb.Latest != 2 || tb.ID == "" || tb.IDVersion != 2 {
		t.Fatalf("table %+v", tb)
	}
	q := queryID(t, "sink-checkpoint")
	txn, err := tb.Txn(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	if txn.Version != 2 || txn.TableVersion != 2 {
		t.Errorf("txn %+v, want batch 2 from the checkpoint at 2", txn)
	}
}
