package checkpoint_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/storage"
	"github.com/ckpt-dev/ckpt/internal/storage/storetest"
)

// detectCase is one layout: files written below the base, and the location Detect is asked about.
type detectCase struct {
	name  string
	files map[string]string
	at    string // the location below the base
	want  checkpoint.Location
	// msg is part of the refusal Require gives ("" for a checkpoint).
	msg string
}

const sinkEntry = "v1\n{\"path\":\"/out/part-0\",\"size\":1,\"isDir\":false,\"modificationTime\":1,\"blockReplication\":1,\"blockSize\":1,\"action\":\"add\"}"

func detectCases() []detectCase {
	ck := map[string]string{"metadata": `{"id":"x"}`, "offsets/0": off, "commits/0": "v1\n{}"}
	under := func(dir string, m map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range m {
			out[dir+"/"+k] = v
		}
		return out
	}
	merge := func(ms ...map[string]string) map[string]string {
		out := map[string]string{}
		for _, m := range ms {
			for k, v := range m {
				out[k] = v
			}
		}
		return out
	}
	return []detectCase{
		{name: "checkpoint", files: under("ck", ck), at: "ck", want: checkpoint.Location{Kind: checkpoint.KindCheckpoint, Entries: 3}},
		{name: "metadata only", files: map[string]string{"ck/metadata": `{"id":"x"}`}, at: "ck", want: checkpoint.Location{Kind: checkpoint.KindCheckpoint, Entries: 1}},
		{name: "missing", files: map[string]string{"other/x": "1"}, at: "typo", want: checkpoint.Location{Kind: checkpoint.KindMissing}, msg: "no checkpoint at {U}: "},
		{name: "unrelated", files: map[string]string{"d/a.txt": "1", "d/data/x.csv": "2"}, at: "d",
			want: checkpoint.Location{Kind: checkpoint.KindUnrelated, Names: []string{"a.txt", "data/"}, Entries: 2},
			msg:  "no checkpoint at {U}: it holds a.txt, data/, but no offsets/, commits/ or metadata"},
		{name: "parent", files: merge(under("p/orders", ck), under("p/payments", ck), map[string]string{"p/README": "x", "p/logs/app.log": "x"}), at: "p",
			want: checkpoint.Location{Kind: checkpoint.KindParent, Checkpoints: []string{"orders", "payments"}, Entries: 4},
			msg:  "no checkpoint at {U}: {U} is a folder holding 2 checkpoint(s):\n  {U}/orders\n  {U}/payments\ndiagnose them all with:\n  ckpt doctor --recursive {U}\nor one of them with:\n  ckpt doctor {U}/orders"},
		{name: "grandparent", files: merge(under("g/team/orders", ck), map[string]string{"g/other/x": "1"}), at: "g",
			want: checkpoint.Location{Kind: checkpoint.KindParent, Checkpoints: []string{"team/orders"}, Entries: 2},
			msg:  "ckpt doctor --recursive {U}"},
		{name: "offsets dir", files: under("ck", ck), at: "ck/offsets",
			want: checkpoint.Location{Kind: checkpoint.KindLogDir, LogDir: "offsets", Parent: "{P}", Entries: 1},
			msg:  "this is the offsets/ directory of a checkpoint; pass the directory above it:\n  ckpt doctor {P}"},
		{name: "commits dir", files: under("ck", ck), at: "ck/commits/",
			want: checkpoint.Location{Kind: checkpoint.KindLogDir, LogDir: "commits", Parent: "{P}", Entries: 1}, msg: "this is the commits/ directory"},
		{name: "sink output", files: map[string]string{"out/_spark_metadata/0": sinkEntry, "out/part-0": "x"}, at: "out",
			want: checkpoint.Location{Kind: checkpoint.KindSinkOutput, Entries: 2}, msg: "file sink's output directory"},
		{name: "sink log copy", files: map[string]string{"copy/0": sinkEntry}, at: "copy",
			want: checkpoint.Location{Kind: checkpoint.KindSinkLog, Names: []string{"0"}, Entries: 1}, msg: "file sink's log"},
	}
}

// runDetect checks every layout on one kind of store. open returns the store of a location
// below the base and its URI; write writes a file below the base.
func runDetect(t *testing.T, open func(t *testing.T, at string) storage.Store, write func(t *testing.T, p, data string), skip ...string) {
	ctx := context.Background()
	for _, tc := range detectCases() {
		if slices.Contains(skip, tc.name) {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			base := strings.ReplaceAll(tc.name, " ", "-")
			for p, d := range tc.files {
				write(t, base+"/"+p, d)
			}
			s := open(t, base+"/"+tc.at)
			got, err := checkpoint.Detect(ctx, s)
			if err != nil {
				t.Fatal(err)
			}
			u := s.URI()
			parent := strings.TrimRight(u, "/")
			parent = parent[:strings.LastIndex(parent, "/")]
			want := tc.want
			want.URI = u
			want.Parent = strings.ReplaceAll(want.Parent, "{P}", parent)
			if !reflect.DeepEqual(checkpoint.WithoutRoot(*got), want) {
				t.Errorf("Detect(%s) =\n %+v\nwant\n %+v", u, *got, want)
			}
			_, err = checkpoint.Require(ctx, s, checkpoint.RequireOptions{})
			var nc *checkpoint.NotCheckpointError
			if tc.msg == "" {
				if err != nil {
					t.Errorf("Require: %v", err)
				}
				return
			}
			if !errors.As(err, &nc) {
				t.Fatalf("Require = %v, want a NotCheckpointError", err)
			}
			msg := strings.NewReplacer("{U}", u, "{P}", parent).Replace(tc.msg)
			if !strings.Contains(err.Error(), msg) {
				t.Errorf("Require's message:\n%s\nwant it to contain:\n%s", err, msg)
			}
		})
	}
}

func TestDetectLocal(t *testing.T) {
	dir := t.TempDir()
	runDetect(t,
		func(t *testing.T, at string) storage.Store {
			s, err := storage.NewLocal(filepath.Join(dir, filepath.FromSlash(at)) + map[bool]string{true: "/"}[strings.HasSuffix(at, "/")])
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		func(t *testing.T, p, data string) {
			f := filepath.Join(dir, filepath.FromSlash(p))
			if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(f, []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		})
}

// Local disk has a kind object stores do not: an empty directory.
func TestDetectLocalEmpty(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	for at, want := range map[string]checkpoint.LocationKind{"empty": checkpoint.KindEmpty} {
		s, err := storage.NewLocal(filepath.Join(dir, at))
		if err != nil {
			t.Fatal(err)
		}
		got, err := checkpoint.Detect(ctx, s)
		if err != nil || got.Kind != want {
			t.Fatalf("Detect(%s) = %+v, %v; want %s", at, got, err, want)
		}
		_, err = checkpoint.Require(ctx, s, checkpoint.RequireOptions{})
		if err == nil {
			t.Errorf("Require(%s) accepted a %s", at, want)
		}
	}
	// --allow-empty accepts the empty directory and an unrelated one, never a missing path.
	s, _ := storage.NewLocal(filepath.Join(dir, "empty"))
	if _, err := checkpoint.Require(ctx, s, checkpoint.RequireOptions{AllowEmpty: true}); err != nil {
		t.Errorf("Require(empty, AllowEmpty) = %v", err)
	}
	s, _ = storage.NewLocal(filepath.Join(dir, "nope"))
	_, err := checkpoint.Require(ctx, s, checkpoint.RequireOptions{AllowEmpty: true, AllowEmptyFlag: true})
	if err == nil || !strings.Contains(err.Error(), "the path does not exist") || strings.Contains(err.Error(), "--allow-empty") {
		t.Errorf("Require(missing, AllowEmpty) = %v, want the path does not exist", err)
	}
	s, _ = storage.NewLocal(filepath.Join(dir, "empty"))
	_, err = checkpoint.Require(ctx, s, checkpoint.RequireOptions{AllowEmptyFlag: true})
	if err == nil || !strings.Contains(err.Error(), "the directory is empty (--allow-empty treats it as a new query that has not started)") {
		t.Errorf("Require(empty) = %v", err)
	}
}

func TestDetectMem(t *testing.T) {
	m := storage.NewMem()
	runDetect(t,
		func(t *testing.T, at string) storage.Store { return m.Sub(strings.TrimRight(at, "/")) },
		func(t *testing.T, p, data string) {
			if err := m.WriteFile(context.Background(), p, []byte(data)); err != nil {
				t.Fatal(err)
			}
		}, "missing") // the in-memory store's root always exists
}

// On S3 (versitygw) a location is a key prefix: "missing" is a prefix no key has; a folder
// marker object makes an "empty" one.
func TestDetectS3(t *testing.T) {
	client, bucket := storetest.S3Bucket(t)
	root := storage.NewS3FromClient(client, bucket, "")
	runDetect(t,
		func(t *testing.T, at string) storage.Store { return storage.NewS3FromClient(client, bucket, at) },
		func(t *testing.T, p, data string) {
			if err := root.WriteFile(context.Background(), p, []byte(data)); err != nil {
				t.Fatal(err)
			}
		})
	ctx := context.Background()
	if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("marker/"), Body: strings.NewReader("")}); err != nil {
		t.Fatal(err)
	}
	got, err := checkpoint.Detect(ctx, storage.NewS3FromClient(client, bucket, "marker"))
	if err != nil || got.Kind != checkpoint.KindEmpty {
		t.Errorf("Detect(folder marker) = %+v, %v; want empty", got, err)
	}
	_, err = checkpoint.Require(ctx, storage.NewS3FromClient(client, bucket, "typo"), checkpoint.RequireOptions{})
	if err == nil || !strings.Contains(err.Error(), "no checkpoint at s3://"+bucket+"/typo: no object has this prefix") {
		t.Errorf("Require(missing prefix) = %v", err)
	}
}
