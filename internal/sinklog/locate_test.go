package sinklog

import (
	"context"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/storage"
)

func TestLocate(t *testing.T) {
	for uri, want := range map[string]string{
		"/out":                       Dir,
		"/out/":                      Dir,
		"s3://b/out/_spark_metadata": "",
		"/out/_spark_metadata/":      "",
		`C:\out\_spark_metadata\`:    "",
		"_spark_metadata":            "",
		"/out/_spark_metadata_old":   Dir,
	} {
		if got := Locate(uri); got != want {
			t.Errorf("Locate(%q) = %q, want %q", uri, got, want)
		}
	}
}

func TestOutputDir(t *testing.T) {
	for uri, want := range map[string]string{
		"/out":                       "/out",
		"/out/":                      "/out/",
		"s3://b/out/_spark_metadata": "s3://b/out",
		"/out/_spark_metadata/":      "/out",
		"/out//_spark_metadata":      "/out",
		`C:\out\_spark_metadata\`:    `C:\out`,
		"_spark_metadata":            ".",
		"/_spark_metadata":           "/",
		"/out/_spark_metadata_old":   "/out/_spark_metadata_old",
	} {
		if got := OutputDir(uri); got != want {
			t.Errorf("OutputDir(%q) = %q, want %q", uri, got, want)
		}
	}
}

func TestLatestAt(t *testing.T) {
	ctx := context.Background()
	s := storage.NewMem()
	if _, ok, err := LatestAt(ctx, s); err != nil || ok {
		t.Fatalf("empty store: ok %v err %v", ok, err)
	}
	if err := s.WriteFile(ctx, Dir+"/3", []byte("v1\n")); err != nil {
		t.Fatal(err)
	}
	if latest, ok, err := LatestAt(ctx, s); err != nil || !ok || latest != 3 {
		t.Fatalf("latest %d ok %v err %v", latest, ok, err)
	}
}
