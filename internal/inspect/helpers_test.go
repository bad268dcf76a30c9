package inspect

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/storage"
)

// files is a checkpoint written into a store: path -> content.
type files map[string]string

func memStore(t testing.TB, fs files) storage.Store {
	t.Helper()
	s := storage.NewMem()
	write(t, s, fs)
	return s
}

func write(t testing.TB, s storage.Store, fs files) {
	t.Helper()
	for p, c := range fs {
		if err := s.WriteFile(context.Background(), p, []byte(c)); err != nil {
			t.Fatalf("write %s: %v", p, err)
		}
	}
}

// offsets is an offsets file: v1, the metadata line with conf in the given order, and the lines.
func offsets(ts, wm int64, conf [][2]string, lines ...string) string {
	var c []string
	for _, kv := range conf {
		c = append(c, fmt.Sprintf("%q:%q", kv[0], kv[1]))
	}
	meta := fmt.Sprintf(`{"batchWatermarkMs":%d,"batchTimestampMs":%d,"conf":{%s}}`, wm, ts, strings.Join(c, ","))
	return "v1\n" + meta + "\n" + strings.Join(lines, "\n")
}

// kafkaInit is a Kafka initial offsets file as Spark writes it: a NUL byte, v1, the JSON.
func kafkaInit(json string) string { return "\x00v1\n" + json }

const queryID = "ab7bcd9a-4146-45d3-933d-a615b381c3be"

var conf2 = [][2]string{
	{"spark.sql.streaming.stateStore.providerClass", "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"},
	{"spark.sql.shuffle.partitions", "5"},
}

// toJSON marshals v and decodes it into a generic value, for assertions on the JSON contract.
func toJSON(t testing.TB, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

// get walks a decoded JSON value by keys and indexes: get(m, "offsets", "ranges", 0, 1).
func get(t testing.TB, v any, path ...any) any {
	t.Helper()
	cur := v
	for i, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := cur.(map[string]any)
			if !ok {
				t.Fatalf("at %v: not an object: %v", path[:i], cur)
			}
			if _, ok := m[k]; !ok {
				t.Fatalf("at %v: no key %q in %v", path[:i], k, keys(m))
			}
			cur = m[k]
		case int:
			a, ok := cur.([]any)
			if !ok || k >= len(a) {
				t.Fatalf("at %v: not an array with index %d: %v", path[:i], k, cur)
			}
			cur = a[k]
		}
	}
	return cur
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// js renders a decoded JSON value compactly, for comparisons.
func js(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func eq(t testing.TB, what string, got, want any) {
	t.Helper()
	if g, w := fmt.Sprint(got), fmt.Sprint(want); g != w {
		t.Errorf("%s = %s, want %s", what, g, w)
	}
}

// conformanceDir is the saved Spark fixtures in testdata/spark. Tests fail rather than skip when
// it is missing: they are the ground truth.
func conformanceDir(t testing.TB) string {
	t.Helper()
	d := filepath.Join("..", "..", "testdata", "spark")
	if _, err := os.Stat(d); err != nil {
		t.Fatalf("conformance fixtures missing: %v", err)
	}
	return d
}

// copyDir copies a local directory tree into a store (e.g. S3).
func copyDir(t testing.TB, dir string, s storage.Store, prefix string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return s.WriteFile(context.Background(), storage.Join(prefix, filepath.ToSlash(rel)), data)
	})
	if err != nil {
		t.Fatal(err)
	}
}
