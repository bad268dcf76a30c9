package root

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/ckpt-dev/ckpt/internal/embedkafka"
	"github.com/ckpt-dev/ckpt/internal/storage/storetest"
)

// s3KafkaCheckpoint writes a checkpoint of n batches of one Kafka source (topic orders, one
// partition at offset 10*i) below prefix.
func s3KafkaCheckpoint(t *testing.T, client *s3.Client, bucket, prefix string, n int) {
	t.Helper()
	ctx := context.Background()
	put := func(key, body string) error {
		_, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(prefix + "/" + key), Body: strings.NewReader(body)})
		return err
	}
	if err := put("metadata", `{"id":"8a6ea7b6-6c9b-4a05-a8ef-0e7e2ad1e6d2"}`); err != nil {
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
				if err := put(fmt.Sprintf("offsets/%d", i), fmt.Sprintf("v1\n{\"batchWatermarkMs\":0,\"batchTimestampMs\":%d,\"conf\":{}}\n{\"orders\":{\"0\":%d}}", ts, 10*i)); err != nil {
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

// tally sorts requests by kind: listings per prefix, reads per key, HEADs.
type tally struct {
	lists map[string]int // ListObjectsV2 requests per prefix
	gets  map[string]int // GetObject per key
	heads []string
	other []string
	total int
}

var prefixParam = regexp.MustCompile(`prefix=([^&]*)`)

func count(reqs []string) tally {
	c := tally{lists: map[string]int{}, gets: map[string]int{}, total: len(reqs)}
	for _, r := range reqs {
		op, u, _ := strings.Cut(r, " ")
		switch op {
		case "ListObjectsV2":
			p := ""
			if m := prefixParam.FindStringSubmatch(u); len(m) == 2 {
				p = strings.ReplaceAll(m[1], "%2F", "/")
			}
			if !strings.Contains(u, "delimiter=") {
				p += " (walk)" // a recursive listing, page by page
			}
			c.lists[p]++
		case "GetObject":
			c.gets[u[strings.Index(u, "/ck")+1:]]++
		case "HeadObject":
			c.heads = append(c.heads, u)
		default:
			c.other = append(c.other, r)
		}
	}
	return c
}

func (c tally) String() string {
	var ls []string
	for p, n := range c.lists {
		ls = append(ls, fmt.Sprintf("%s×%d", p, n))
	}
	sort.Strings(ls)
	gets := 0
	for _, n := range c.gets {
		gets += n
	}
	return fmt.Sprintf("%d requests: lists %s; %d GETs of %d keys; %d HEADs %v; other %v", c.total, strings.Join(ls, " "), gets, len(c.gets), len(c.heads), c.heads, c.other)
}

// Every command that reads a checkpoint lists its root once (checkpoint.LoadAt reusing what
// Require listed) and each log directory page by page, once: before, offsets, purge, rewind,
// state, lag and inspect listed the root twice or more (Require, then Load).
func TestS3RequestCountsPerCommand(t *testing.T) {
	cfg := storetest.S3Env(t)
	client, bucket := storetest.S3Bucket(t)
	t.Setenv("AWS_ACCESS_KEY_ID", cfg.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", cfg.SecretKey)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	n := requestBatches(t)
	s3KafkaCheckpoint(t, client, bucket, "ck", n)
	pages := (n + 999) / 1000
	broker, err := embedkafka.Start(context.Background(), embedkafka.Options{Topics: []embedkafka.TopicSpec{{Name: "orders", Partitions: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	defer broker.Close()
	ck := "s3://" + bucket + "/ck"
	// A second checkpoint whose offsets/L-1 is missing: repair plans every strategy, each on its
	// own overlay, step after step.
	s3KafkaCheckpoint(t, client, bucket, "ck2", n)
	if _, err := client.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(fmt.Sprintf("ck2/offsets/%d", n-2))}); err != nil {
		t.Fatal(err)
	}
	// Every command lists the root once and each log directory once, page by page. minimal
	// commands also read no key twice and send at most heads HEADs (lag stats the latest commit
	// for its time; the liveness check of rewind, purge and offsets reset the times of offsets/L-1,
	// L, commits/L-1 and L: listings by name carry no time). Before, each listed the root once more
	// (Require, then Load), rewind, purge and offsets reset once more for the liveness check, and
	// the planners loaded the checkpoint again for the plan after the change (rewind 2 roots,
	// purge 3, repair 5, repair of the missing offsets file 10), reading files twice.
	for _, c := range []struct {
		name    string
		root    string
		args    []string
		minimal bool
		heads   int
	}{
		{"inspect", "ck", []string{"inspect", ck}, true, 0},
		{"inspect --batches", "ck", []string{"inspect", ck, "--batches", "--last", "3"}, true, 0},
		{"offsets export", "ck", []string{"offsets", "export", ck}, true, 0},
		{"offsets reset", "ck", []string{"offsets", "reset", ck, "--shift-by", "-5"}, true, 4},
		{"replay --what-if", "ck", []string{"replay", ck, "--what-if", "crash-after-commit"}, true, 0},
		{"state ls", "ck", []string{"state", "ls", ck}, true, 0},
		{"lag", "ck", []string{"lag", ck, "--bootstrap-server", broker.Addr()}, true, 1},
		{"rewind", "ck", []string{"rewind", ck, "--to-batch", fmt.Sprint(n - 3)}, true, 4},
		{"purge", "ck", []string{"purge", ck, "--keep", "100"}, true, 4},
		{"repair", "ck", []string{"repair", ck}, true, 0},
		{"repair missing-previous-offsets", "ck2", []string{"repair", ck + "2"}, true, 4},
		{"cp", "ck", []string{"cp", ck, t.TempDir() + "/copy"}, false, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := count(requests(t, cfg.Endpoint, c.args...))
			t.Logf("%s at %d batches: %s", c.name, n, got)
			if r := got.lists[c.root+"/"]; r != 1 {
				t.Errorf("the root listed %d times, want once", r)
			}
			dirs := []string{c.root + "/offsets/", c.root + "/commits/"}
			if c.name == "state ls" {
				dirs = dirs[:0] // the state store's files alone
			}
			if c.name == "cp" {
				dirs = dirs[:0] // the walk of the whole tree tells which log file is newest
				if l := got.lists[c.root+"/offsets/"]; l != 0 {
					t.Errorf("offsets/ listed in %d requests besides the walk", l)
				}
				for k, r := range got.gets {
					if r > 1 {
						t.Errorf("%s read %d times", k, r)
					}
				}
			}
			for _, d := range dirs {
				if l := got.lists[d]; l != pages {
					t.Errorf("%s listed in %d requests, want one listing of %d pages", d, l, pages)
				}
			}
			if len(got.heads) > c.heads {
				t.Errorf("%d HEADs, want at most %d: %v", len(got.heads), c.heads, got.heads)
			}
			if !c.minimal {
				return
			}
			for k, r := range got.gets {
				if r > 1 {
					t.Errorf("%s read %d times", k, r)
				}
			}
		})
	}
}
