package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/creack/pty"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/ckpt-dev/ckpt/internal/scenario"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// Script commands of `ckpt repair`'s tests (testdata/script/repair*.txtar).
func init() {
	// backdate DIR sets every file below DIR to an hour ago, so the checkpoint a script just built
	// does not look like a live query to repair's --active-window check.
	scriptCmds["backdate"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 1 {
			ts.Fatalf("usage: backdate DIR")
		}
		old := time.Now().Add(-time.Hour)
		ts.Check(filepath.WalkDir(ts.MkAbs(args[0]), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			return os.Chtimes(p, old, old)
		}))
	}
	// fingerprint DIR FILE writes one line per file below DIR (except ckpt's _ckpt/): its path and
	// the SHA-256 of its bytes, sorted. Comparing two fingerprints with cmp proves byte-identity.
	scriptCmds["fingerprint"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 2 {
			ts.Fatalf("usage: fingerprint DIR FILE")
		}
		root := ts.MkAbs(args[0])
		var lines []string
		ts.Check(filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			rel = filepath.ToSlash(rel)
			if d.IsDir() {
				if rel == "_ckpt" {
					return filepath.SkipDir
				}
				return nil
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			lines = append(lines, fmt.Sprintf("%x  %s", sha256.Sum256(b), rel))
			return nil
		}))
		sort.Strings(lines)
		ts.Check(os.WriteFile(ts.MkAbs(args[1]), []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	}
	// repairdir CHECKPOINT VAR sets $VAR to the one repair directory under
	// CHECKPOINT/_ckpt/repairs (the journal a repair printed), since scripts have no globs.
	scriptCmds["repairdir"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 2 {
			ts.Fatalf("usage: repairdir CHECKPOINT VAR")
		}
		des, err := os.ReadDir(ts.MkAbs(filepath.Join(args[0], "_ckpt", "repairs")))
		ts.Check(err)
		if len(des) != 1 {
			ts.Fatalf("repairdir: %d repair directories, want 1", len(des))
		}
		ts.Setenv(args[1], filepath.ToSlash(filepath.Join(args[0], "_ckpt", "repairs", des[0].Name())))
	}
	// s3probe puts an executable ckpt-s3-ok on the script's PATH when a test S3 server is
	// configured (CKPT_TEST_S3_ENDPOINT), so that a script can say
	// [!exec:ckpt-s3-ok] skip: testscript has no condition on environment variables.
	scriptCmds["s3probe"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 0 {
			ts.Fatalf("usage: s3probe")
		}
		if ts.Getenv("CKPT_TEST_S3_ENDPOINT") == "" {
			if ts.Getenv("CI") != "" {
				ts.Fatalf("CI must not skip S3 tests: eval \"$(.ci/s3.sh start)\"")
			}
			return
		}
		dir := ts.MkAbs(".s3bin")
		ts.Check(os.MkdirAll(dir, 0o755))
		ts.Check(os.WriteFile(filepath.Join(dir, "ckpt-s3-ok"), []byte("#!/bin/sh\nexit 0\n"), 0o755))
		ts.Setenv("PATH", dir+string(filepath.ListSeparator)+ts.Getenv("PATH"))
	}
	// mks3scenario NAME VAR builds scenario NAME into a fresh bucket of the test S3 server
	// (CKPT_TEST_S3_*) and sets $VAR to its s3:// location. Scripts using it skip without a server.
	scriptCmds["mks3scenario"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 2 {
			ts.Fatalf("usage: mks3scenario NAME VAR")
		}
		sc, ok := scenario.Get(args[0])
		if !ok {
			ts.Fatalf("mks3scenario: no scenario %q", args[0])
		}
		ctx := context.Background()
		client := s3.New(s3.Options{
			BaseEndpoint: aws.String(ts.Getenv("CKPT_TEST_S3_ENDPOINT")),
			UsePathStyle: true,
			Region:       "us-east-1",
			Credentials:  credentials.NewStaticCredentialsProvider(ts.Getenv("CKPT_TEST_S3_ACCESS_KEY"), ts.Getenv("CKPT_TEST_S3_SECRET_KEY"), ""),
		})
		var rnd [6]byte
		_, _ = rand.Read(rnd[:])
		bucket := fmt.Sprintf("ckpt-script-%x", rnd)
		_, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)})
		ts.Check(err)
		st := storage.NewS3FromClient(client, bucket, "ckpt")
		ts.Check(sc.WriteTo(ctx, st))
		ts.Setenv(args[1], st.URI())
	}
	// setfromstdout VAR REGEXP sets $VAR to the first submatch of REGEXP in the last command's
	// stdout (a journal location a repair printed, on stores scripts cannot list).
	scriptCmds["setfromstdout"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 2 {
			ts.Fatalf("usage: setfromstdout VAR REGEXP")
		}
		m := regexp.MustCompile(args[1]).FindStringSubmatch(ts.ReadFile("stdout"))
		if len(m) < 2 {
			ts.Fatalf("setfromstdout: no match for %s", args[1])
		}
		ts.Setenv(args[0], m[1])
	}
	// ptyrun ANSWER PROG ARGS... runs PROG on a pseudo-terminal (stdin and stdout are a TTY), types
	// ANSWER and a newline once PROG asks "[y/N]", and leaves what PROG printed in stdout. It tests
	// the interactive confirmation the way a person meets it.
	scriptCmds["ptyrun"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if len(args) < 2 {
			ts.Fatalf("usage: ptyrun ANSWER PROG [ARGS...]")
		}
		out, err := runPTY(ts, args[0], args[1], args[2:]...)
		ts.Logf("pty output:\n%s", out)
		if err != nil && !neg {
			ts.Fatalf("ptyrun: %v", err)
		}
		if err == nil && neg {
			ts.Fatalf("ptyrun: %s succeeded unexpectedly", args[1])
		}
		// Make the output available to stdout assertions: the pty mixes stdout and stderr.
		ts.Check(os.WriteFile(ts.MkAbs("pty.out"), out, 0o644))
	}
}

func runPTY(ts *testscript.TestScript, answer, prog string, args ...string) ([]byte, error) {
	path := ""
	for _, dir := range filepath.SplitList(ts.Getenv("PATH")) {
		if c := filepath.Join(dir, prog); fileExists(c) {
			path = c
			break
		}
	}
	if path == "" {
		return nil, fmt.Errorf("%s not found in the script's PATH", prog)
	}
	cmd := exec.Command(path, args...)
	cmd.Dir = ts.Getenv("WORK")
	for _, k := range []string{"PATH", "HOME", "NO_COLOR", "WORK", "TMPDIR"} {
		cmd.Env = append(cmd.Env, k+"="+ts.Getenv(k))
	}
	cmd.Env = append(cmd.Env, "TERM=dumb")
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 50, Cols: 200})
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() {
		buf := make([]byte, 4096)
		answered := false
		for {
			n, rerr := f.Read(buf)
			out.Write(buf[:n])
			if !answered && bytes.Contains(out.Bytes(), []byte("[y/N]")) {
				answered = true
				if _, err := io.WriteString(f, answer+"\n"); err != nil {
					done <- err
					return
				}
			}
			if rerr != nil {
				done <- nil // EIO once the child exits and the pty closes
				return
			}
		}
	}()
	werr := cmd.Wait()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
	}
	return bytes.ReplaceAll(out.Bytes(), []byte("\r\n"), []byte("\n")), werr
}

func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir()
}
