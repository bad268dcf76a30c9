package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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

// Script commands of the terminal tests (testdata/script/tty_*.txtar): a command run on a
// pseudo-terminal of a given size, and large checkpoints to show progress on.
func init() {
	// ttyrun [-cols N] [-stdout FILE] [-env K=V]... PROG ARGS... runs PROG with stdout and stderr
	// on a pseudo-terminal N columns wide (default 80) and leaves what the terminal showed in
	// tty.out (\r\n as \n, a lone \r kept). With -stdout, stdout goes to FILE instead (a pipe, as
	// in `ckpt … > FILE`) and only stderr is the terminal. -env adds to the environment, which
	// otherwise holds only PATH, HOME, WORK, TMPDIR, NO_COLOR and TERM=dumb.
	scriptCmds["ttyrun"] = func(ts *testscript.TestScript, neg bool, args []string) {
		cols, stdout := 80, ""
		var env []string
	flags:
		for len(args) >= 2 {
			switch args[0] {
			case "-cols":
				n, err := strconv.Atoi(args[1])
				ts.Check(err)
				cols = n
			case "-stdout":
				stdout = ts.MkAbs(args[1])
			case "-env":
				env = append(env, args[1])
			default:
				break flags
			}
			args = args[2:]
		}
		if len(args) < 1 {
			ts.Fatalf("usage: ttyrun [-cols N] [-stdout FILE] [-env K=V]... PROG [ARGS...]")
		}
		out, err := runTTY(ts, cols, stdout, env, args[0], args[1:]...)
		ts.Logf("terminal:\n%s", out)
		ts.Check(os.WriteFile(ts.MkAbs("tty.out"), out, 0o644))
		if err != nil && !neg {
			ts.Fatalf("ttyrun: %v", err)
		}
		if err == nil && neg {
			ts.Fatalf("ttyrun: %s succeeded unexpectedly", args[0])
		}
	}
	// maxwidth [-box] FILE N fails if a line of FILE is wider than N characters (runes), once the
	// escape sequences and the text a \r wrote over are removed. With -box only the lines of a
	// table's box count (free text may hold a word wider than the screen, which the terminal folds).
	scriptCmds["maxwidth"] = func(ts *testscript.TestScript, neg bool, args []string) {
		box := len(args) == 3 && args[0] == "-box"
		if box {
			args = args[1:]
		}
		if neg || len(args) != 2 {
			ts.Fatalf("usage: maxwidth [-box] FILE N")
		}
		n, err := strconv.Atoi(args[1])
		ts.Check(err)
		for i, line := range strings.Split(ts.ReadFile(args[0]), "\n") {
			if k := strings.LastIndexByte(line, '\r'); k >= 0 {
				line = line[k+1:]
			}
			if box && !strings.ContainsAny(line, "│╭╰├") {
				continue
			}
			if w := len([]rune(stripEscapes(line))); w > n {
				ts.Fatalf("%s:%d is %d characters wide, over %d:\n%s", args[0], i+1, w, n, line)
			}
		}
	}
	// mkbatches DIR N writes a checkpoint of N batches (offsets and commits 0..N-1, one Kafka
	// source of 2 partitions) into DIR.
	scriptCmds["mkbatches"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 2 {
			ts.Fatalf("usage: mkbatches DIR N")
		}
		n, err := strconv.ParseInt(args[1], 10, 64)
		ts.Check(err)
		b := scenario.NewBuilder("mkbatches").Metadata()
		b.OffsetsRange(0, n-1, func(id int64) []string { return []string{scenario.Kafka("events", id, 2)} })
		b.Commits(0, n-1)
		// Plain writes: the store's atomic create-only writes cost a sync each, minutes for 10k.
		root := ts.MkAbs(args[0])
		for p, data := range b.Files() {
			full := filepath.Join(root, filepath.FromSlash(p))
			ts.Check(os.MkdirAll(filepath.Dir(full), 0o755))
			ts.Check(os.WriteFile(full, data, 0o644))
		}
	}
}

func stripEscapes(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '[' {
			j := i + 2
			for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
				j++
			}
			i = j
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func runTTY(ts *testscript.TestScript, cols int, stdout string, env []string, prog string, args ...string) ([]byte, error) {
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
	cmd.Env = append(cmd.Env, env...)
	ptmx, tty, err := pty.Open()
	if err != nil {
		return nil, err
	}
	defer ptmx.Close()
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 50, Cols: uint16(cols)}); err != nil {
		tty.Close()
		return nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	if stdout != "" {
		f, err := os.Create(stdout)
		if err != nil {
			tty.Close()
			return nil, err
		}
		defer f.Close()
		cmd.Stdout = f
	}
	if err := cmd.Start(); err != nil {
		tty.Close()
		return nil, err
	}
	tty.Close() // the child holds its own copy; EOF on ptmx once it exits
	var out bytes.Buffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		for {
			n, rerr := ptmx.Read(buf)
			out.Write(buf[:n])
			if rerr != nil {
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

// mks3fleet VAR NAME:PREFIX... builds each scenario NAME under PREFIX of one fresh bucket of the
// test S3 server (below fleet/) and sets $VAR to s3://<bucket>/fleet. Scripts skip without a server.
func init() {
	scriptCmds["mks3fleet"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) < 2 {
			ts.Fatalf("usage: mks3fleet VAR NAME:PREFIX...")
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
		bucket := fmt.Sprintf("ckpt-fleet-%x", rnd)
		_, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)})
		ts.Check(err)
		for _, a := range args[1:] {
			name, prefix, ok := strings.Cut(a, ":")
			if !ok {
				ts.Fatalf("mks3fleet: %q is not NAME:PREFIX", a)
			}
			sc, ok := scenario.Get(name)
			if !ok {
				ts.Fatalf("mks3fleet: no scenario %q", name)
			}
			ts.Check(sc.WriteTo(ctx, storage.NewS3FromClient(client, bucket, "fleet/"+prefix)))
		}
		ts.Setenv(args[0], "s3://"+bucket+"/fleet")
	}
}

// mksinklog DIR N INTERVAL writes a file sink's log DIR/_spark_metadata of batches 0..N-1, a
// compaction file every INTERVAL batches (holding every entry so far), one added file per batch.
func init() {
	scriptCmds["mksinklog"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 3 {
			ts.Fatalf("usage: mksinklog DIR N INTERVAL")
		}
		n, err := strconv.Atoi(args[1])
		ts.Check(err)
		interval, err := strconv.Atoi(args[2])
		ts.Check(err)
		dir := filepath.Join(ts.MkAbs(args[0]), "_spark_metadata")
		ts.Check(os.MkdirAll(dir, 0o755))
		entry := func(id int) string {
			return fmt.Sprintf(`{"path":"file:///out/part-%05d.json","size":10,"isDir":false,"modificationTime":1700000000000,"blockReplication":1,"blockSize":33554432,"action":"add"}`, id)
		}
		var all []string
		for id := 0; id < n; id++ {
			all = append(all, entry(id))
			name, lines := strconv.Itoa(id), []string{entry(id)}
			if (id+1)%interval == 0 {
				name, lines = name+".compact", all
			}
			ts.Check(os.WriteFile(filepath.Join(dir, name), []byte("v1\n"+strings.Join(lines, "\n")), 0o644))
		}
	}
}
