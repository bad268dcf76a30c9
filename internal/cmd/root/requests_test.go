package root

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/ckpt-dev/ckpt/internal/cli"
	"github.com/ckpt-dev/ckpt/internal/iostreams"
	"github.com/ckpt-dev/ckpt/internal/storage/storetest"
)

// requestBatches is the size of the checkpoint the request counts are measured on: two
// listing pages per log directory. CKPT_REQUEST_BATCHES overrides it (docs/benchmarks.md's
// figures were taken at 10000).
func requestBatches(t *testing.T) int {
	if v := os.Getenv("CKPT_REQUEST_BATCHES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("CKPT_REQUEST_BATCHES=%q", v)
		}
		return n
	}
	return 1100
}

// s3Checkpoint writes a checkpoint of n batches (metadata, offsets/, commits/) below prefix.
func s3Checkpoint(t *testing.T, client *s3.Client, bucket, prefix string, n int) {
	t.Helper()
	ctx := context.Background()
	put := func(key, body string) error {
		_, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(prefix + "/" + key), Body: strings.NewReader(body)})
		return err
	}
	if err := put("metadata", `{"id":"8a6ea7b6-6c9b-4a05-a8ef-0e7e2ad1e6d1"}`); err != nil {
		t.Fatal(err)
	}
	work := make(chan int)
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				ts := 1700000000000 + int64(i)*1000
				if err := put(fmt.Sprintf("offsets/%d", i), fmt.Sprintf("v1\n{\"batchWatermarkMs\":0,\"batchTimestampMs\":%d,\"conf\":{}}\n{\"logOffset\":%d}", ts, i)); err != nil {
					errs <- err
					return
				}
				if err := put(fmt.Sprintf("commits/%d", i), "v1\n{\"nextBatchWatermarkMs\":0}"); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
}

var traceLine = regexp.MustCompile(`(?m)^ckpt: s3 (\w+) (GET|HEAD|PUT|DELETE|POST) (\S+) -> `)

// requests runs ckpt with -v and returns its S3 requests, one "Operation URL" per line.
func requests(t *testing.T, endpoint string, args ...string) []string {
	t.Helper()
	ios, _, _, errOut := iostreams.Test()
	env := &cli.Env{IO: ios, Version: "test", Now: time.Now, Getenv: os.Getenv}
	args = append(args, "-v", "--s3-endpoint", endpoint, "--s3-path-style")
	code := Execute(context.Background(), env, args)
	if code != 0 && code != 3 {
		t.Fatalf("ckpt %s: exit %d\n%s", strings.Join(args, " "), code, errOut)
	}
	var out []string
	for _, m := range traceLine.FindAllStringSubmatch(errOut.String(), -1) {
		out = append(out, m[1]+" "+m[3])
	}
	return out
}

// doctor and replay on S3 make the fewest requests the answer needs: the root listed once, the
// log directories page by page, no HEAD for files whose sizes the listing or the read already
// gave, no key read twice. Before, doctor listed the root twice and sent HeadObject for
// offsets/L, offsets/L-1 and commits/C (29 requests at 10k batches where 25 do), and replay
// listed the root twice. Measured against the server's answers as ckpt's -v trace logs them,
// one line per HTTP request.
func TestS3RequestCounts(t *testing.T) {
	cfg := storetest.S3Env(t)
	client, bucket := storetest.S3Bucket(t)
	t.Setenv("AWS_ACCESS_KEY_ID", cfg.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", cfg.SecretKey)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	n := requestBatches(t)
	s3Checkpoint(t, client, bucket, "ck", n)
	pages := (n + 999) / 1000 // ListObjectsV2 answers 1000 keys a page
	for _, cmd := range []string{"doctor", "replay"} {
		t.Run(cmd, func(t *testing.T) {
			reqs := requests(t, cfg.Endpoint, cmd, "s3://"+bucket+"/ck")
			count := map[string]int{}
			lists := map[string]int{}
			for _, r := range reqs {
				count[r]++
				op, u, _ := strings.Cut(r, " ")
				if op == "HeadObject" {
					t.Errorf("%s: a HEAD: %s", cmd, u)
				}
				if op == "ListObjectsV2" {
					p := regexp.MustCompile(`prefix=([^&]*)`).FindStringSubmatch(u)
					if len(p) == 2 {
						lists[p[1]]++
					}
				}
			}
			for r, c := range count {
				if c > 1 && strings.HasPrefix(r, "GetObject") {
					t.Errorf("%s: %s read %d times", cmd, r, c)
				}
			}
			if lists["ck%2F"] != 1 {
				t.Errorf("%s: the root listed %d times, want once", cmd, lists["ck%2F"])
			}
			for _, d := range []string{"offsets", "commits"} {
				if got := lists["ck%2F"+d+"%2F"]; got != pages {
					t.Errorf("%s: %s/ listed in %d requests, want %d pages", cmd, d, got, pages)
				}
			}
			t.Logf("%s at %d batches: %d requests", cmd, n, len(reqs))
			if testing.Verbose() {
				var b bytes.Buffer
				for _, r := range reqs {
					fmt.Fprintln(&b, r)
				}
				t.Log(b.String())
			}
		})
	}
}
