package fleet

import (
	"context"
	"reflect"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/storage"
)

func TestFind(t *testing.T) {
	ctx := context.Background()
	s := storage.NewMem()
	for _, p := range []string{
		"team-a/orders/offsets/0", "team-a/orders/commits/0", "team-a/orders/metadata",
		"team-a/orders/state/0/0/1.delta", // inside a checkpoint: not searched
		"team-a/payments/metadata",        // stopped before its first batch
		"team-b/deep/er/still/clicks/commits/3",
		"team-b/output/_spark_metadata/0", // a file sink, not a checkpoint
		"team-b/output/part-0000.json",
		"notes.txt",
	} {
		if err := s.WriteFile(ctx, p, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Find(ctx, s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"team-a/orders", "team-a/payments", "team-b/deep/er/still/clicks"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if got, _ := Find(ctx, s, Options{MaxDepth: 2}); !reflect.DeepEqual(got, want[:2]) {
		t.Errorf("depth 2: got %q", got)
	}
}

func TestJoin(t *testing.T) {
	for _, c := range [][3]string{
		{"s3://b/p/", "x/y", "s3://b/p/x/y"},
		{"s3://b", "x", "s3://b/x"},
		{"/data/ckpt", "x/y", "/data/ckpt/x/y"},
		{"/data/ckpt", "", "/data/ckpt"},
	} {
		if got := Join(c[0], c[1]); got != c[2] {
			t.Errorf("Join(%q, %q) = %q, want %q", c[0], c[1], got, c[2])
		}
	}
}
