package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/internal/storage"
)

// GCSHint is the message tests give when no GCS emulator is configured.
const GCSHint = `GCS tests need fake-gcs-server: run eval "$(.ci/gcs.sh start)"`

// GCSEnv returns the test emulator's endpoint, CKPT_TEST_GCS_ENDPOINT (e.g.
// http://127.0.0.1:4443). When it is unset the test fails if CI is set and is skipped
// otherwise, with GCSHint either way.
func GCSEnv(t testing.TB) string {
	t.Helper()
	return need(t, "CKPT_TEST_GCS_ENDPOINT", GCSHint)
}

// need returns the environment variable k, failing the test in CI (CI must not silently skip
// a store) or skipping it elsewhere when k is unset.
func need(t testing.TB, k, hint string) string {
	t.Helper()
	v := os.Getenv(k)
	if v == "" {
		if os.Getenv("CI") != "" {
			t.Fatal(hint)
		}
		t.Skip(hint)
	}
	return v
}

// gcsCall makes one JSON API request to the emulator at endpoint (no credentials) and decodes
// a JSON answer into out (when not nil); any status but 2xx is an error.
func gcsCall(ctx context.Context, method, u string, body []byte, out any) error {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, r)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: HTTP %d: %s", method, u, resp.StatusCode, strings.TrimSpace(string(b)))
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

// gcsObjectURL is the JSON API URL of an object (its name escaped as one path segment).
func gcsObjectURL(endpoint, bucket, name string) string {
	return endpoint + "/storage/v1/b/" + url.PathEscape(bucket) + "/o/" + url.PathEscape(name)
}

// CreateGCSBucket creates bucket on the emulator at endpoint.
func CreateGCSBucket(ctx context.Context, endpoint, bucket string) error {
	b, _ := json.Marshal(map[string]string{"name": bucket})
	return gcsCall(ctx, http.MethodPost, endpoint+"/storage/v1/b?project=ckpt-test", b, nil)
}

// GCSBucket creates a fresh bucket on the test emulator and returns the emulator's endpoint
// and the bucket's name. Cleanup empties and removes the bucket (best-effort; failures are
// logged).
func GCSBucket(t testing.TB) (endpoint, bucket string) {
	t.Helper()
	endpoint = GCSEnv(t)
	bucket = RandomName("ckpt-test-")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := CreateGCSBucket(ctx, endpoint, bucket); err != nil {
		t.Fatalf("create bucket %s on %s: %v", bucket, endpoint, err)
	}
	t.Cleanup(func() { removeGCSBucket(t, endpoint, bucket) })
	return endpoint, bucket
}

// GCSPut stores data as the object name, any name (also ones no store path spells, such as
// directory markers), overwriting it.
func GCSPut(t testing.TB, endpoint, bucket, name string, data []byte) {
	t.Helper()
	q := url.Values{"uploadType": {"media"}, "name": {name}}
	u := endpoint + "/upload/storage/v1/b/" + url.PathEscape(bucket) + "/o?" + q.Encode()
	if err := gcsCall(context.Background(), http.MethodPost, u, data, nil); err != nil {
		t.Fatalf("put %q: %v", name, err)
	}
}

// GCSGet returns the content of the object name.
func GCSGet(t testing.TB, endpoint, bucket, name string) []byte {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, gcsObjectURL(endpoint, bucket, name)+"?alt=media", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("get %q: HTTP %d %s %v", name, resp.StatusCode, b, err)
	}
	return b
}

// GCS returns a store on a fresh bucket, rooted at a random prefix so that objects outside
// the root exist only if the store wrote them there.
func GCS(t testing.TB) *storage.GCS {
	t.Helper()
	endpoint, bucket := GCSBucket(t)
	return storage.NewGCSAt(endpoint, nil, bucket, RandomName("root-"))
}

func removeGCSBucket(t testing.TB, endpoint, bucket string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	q := url.Values{}
	for {
		var page struct {
			Items []struct {
				Name string `json:"name"`
			} `json:"items"`
			NextPageToken string `json:"nextPageToken"`
		}
		if err := gcsCall(ctx, http.MethodGet, endpoint+"/storage/v1/b/"+url.PathEscape(bucket)+"/o?"+q.Encode(), nil, &page); err != nil {
			t.Logf("cleanup: list %s: %v", bucket, err)
			return
		}
		for _, it := range page.Items {
			if err := gcsCall(ctx, http.MethodDelete, gcsObjectURL(endpoint, bucket, it.Name), nil, nil); err != nil {
				t.Logf("cleanup: delete %s/%s: %v", bucket, it.Name, err)
			}
		}
		if page.NextPageToken == "" {
			break
		}
		q.Set("pageToken", page.NextPageToken)
	}
	if err := gcsCall(ctx, http.MethodDelete, endpoint+"/storage/v1/b/"+url.PathEscape(bucket), nil, nil); err != nil {
		t.Logf("cleanup: delete bucket %s: %v", bucket, err)
	}
}
