package checkpoint_test

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"reflect"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

func paths(es []storage.Entry) []string {
	var out []string
	for _, e := range es {
		p := e.Path
		if e.IsDir {
			p += "/"
		}
		out = append(out, p)
	}
	return out
}

func TestOverlay(t *testing.T) {
	ctx := context.Background()
	base := storage.NewMem()
	write(t, base, map[string]string{"offsets/0": "a", "offsets/1": "b", "metadata": "m"})
	o := checkpoint.NewOverlay(base, map[string][]byte{"offsets/2": []byte("c"), "commits/2": []byte("d")})
	o.Hide("offsets/0")

	root, err := o.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"commits/", "metadata", "offsets/"}; !reflect.DeepEqual(paths(root), want) {
		t.Errorf("root = %v, want %v", paths(root), want)
	}
	offs, _ := o.List(ctx, "offsets")
	if want := []string{"offsets/1", "offsets/2"}; !reflect.DeepEqual(paths(offs), want) {
		t.Errorf("offsets = %v, want %v", paths(offs), want)
	}
	all, _ := o.Walk(ctx, "")
	if want := []string{"commits/2", "metadata", "offsets/1", "offsets/2"}; !reflect.DeepEqual(paths(all), want) {
		t.Errorf("walk = %v, want %v", paths(all), want)
	}
	if d, err := o.ReadFile(ctx, "offsets/2"); err != nil || string(d) != "c" {
		t.Errorf("ReadFile overlay = %q, %v", d, err)
	}
	if d, err := o.ReadFile(ctx, "offsets/1"); err != nil || string(d) != "b" {
		t.Errorf("ReadFile base = %q, %v", d, err)
	}
	if _, err := o.ReadFile(ctx, "offsets/0"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("hidden file: %v", err)
	}
	if _, err := o.Stat(ctx, "offsets/0"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("hidden stat: %v", err)
	}
	rc, err := o.Open(ctx, "commits/2")
	if err != nil {
		t.Fatal(err)
	}
	d, _ := io.ReadAll(rc)
	rc.Close()
	if string(d) != "d" {
		t.Errorf("Open = %q", d)
	}
	if err := o.WriteFile(ctx, "offsets/1", []byte("x")); !errors.Is(err, fs.ErrExist) {
		t.Errorf("overwrite of a base file: %v, want fs.ErrExist", err)
	}
	if err := o.WriteFile(ctx, "offsets/3", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := o.Delete(ctx, "offsets/1"); err != nil {
		t.Fatal(err)
	}
	// The base never changes.
	baseAll, _ := base.Walk(ctx, "")
	if want := []string{"metadata", "offsets/0", "offsets/1"}; !reflect.DeepEqual(paths(baseAll), want) {
		t.Errorf("base changed: %v", paths(baseAll))
	}
	if o.URI() != base.URI() {
		t.Errorf("URI = %q, want the base's %q", o.URI(), base.URI())
	}
	cp, err := checkpoint.Load(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cp.Offsets.IDs(), []int64{2, 3}) || !reflect.DeepEqual(cp.Commits.IDs(), []int64{2}) {
		t.Errorf("offsets %v commits %v", cp.Offsets.IDs(), cp.Commits.IDs())
	}
}

// Create on an overlay keeps WriteFile's contract: create-only over the overlay and the base,
// the source's bytes, and a source of another size refused with nothing added.
func TestOverlayCreate(t *testing.T) {
	ctx := context.Background()
	base := storage.NewMem()
	write(t, base, map[string]string{"offsets/0": "a"})
	o := checkpoint.NewOverlay(base, nil)
	if err := o.Create(ctx, "offsets/0", storage.BytesSource([]byte("x"))); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Create over a base file = %v, want fs.ErrExist", err)
	}
	if err := o.Create(ctx, "offsets/1", storage.BytesSource([]byte("b"))); err != nil {
		t.Fatal(err)
	}
	if d, err := o.ReadFile(ctx, "offsets/1"); err != nil || string(d) != "b" {
		t.Fatalf("ReadFile = %q, %v", d, err)
	}
	if err := o.Create(ctx, "offsets/1", storage.BytesSource([]byte("c"))); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second Create = %v, want fs.ErrExist", err)
	}
	short := storage.Source{Size: 5, Open: func(context.Context) (io.ReadCloser, error) {
		return io.NopCloser(io.LimitReader(zeros{}, 3)), nil
	}}
	if err := o.Create(ctx, "offsets/2", short); !errors.Is(err, storage.ErrSourceSize) {
		t.Fatalf("Create of a short source = %v, want ErrSourceSize", err)
	}
	if _, err := o.Stat(ctx, "offsets/2"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("after a failed Create: %v", err)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }
