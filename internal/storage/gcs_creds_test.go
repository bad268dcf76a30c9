package storage

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// gcsServiceAccount writes a service-account key file whose token endpoint is tokenURL and
// points GOOGLE_APPLICATION_CREDENTIALS at it, with no emulator configured.
func gcsServiceAccount(t *testing.T, tokenURL string) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	b, _ := json.Marshal(map[string]string{
		"type":           "service_account",
		"project_id":     "ckpt-test",
		"private_key_id": "k1",
		"private_key":    string(pemKey),
		"client_email":   "ckpt@ckpt-test.iam.gserviceaccount.com",
		"client_id":      "1",
		"token_uri":      tokenURL,
	})
	f := filepath.Join(t.TempDir(), "sa.json")
	if err := os.WriteFile(f, b, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", f)
	t.Setenv("STORAGE_EMULATOR_HOST", "")
}

// TestGCSApplicationDefaultCredentials: with a service-account file, NewGCS gets a token for
// the devstorage.read_write scope from the file's token endpoint and sends it on every
// request.
func TestGCSApplicationDefaultCredentials(t *testing.T) {
	var tokens atomic.Int32
	tokenSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil || r.Form.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
			http.Error(w, `{"error":"invalid_request"}`, http.StatusBadRequest)
			return
		}
		parts := strings.Split(r.Form.Get("assertion"), ".")
		var claims struct {
			Scope string `json:"scope"`
		}
		if len(parts) != 3 {
			http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
			return
		}
		if b, err := base64.RawURLEncoding.DecodeString(parts[1]); err != nil || json.Unmarshal(b, &claims) != nil || claims.Scope != gcsScope {
			http.Error(w, `{"error":"invalid_scope"}`, http.StatusBadRequest)
			return
		}
		tokens.Add(1)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"access_token":"tok-1","token_type":"Bearer","expires_in":3600}`)
	}))
	defer tokenSrv.Close()
	var auth atomic.Value
	apiSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth.Store(r.Header.Get("Authorization"))
		io.WriteString(w, `{"items":[{"name":"ck/a","size":"1"}]}`)
	}))
	defer apiSrv.Close()
	gcsServiceAccount(t, tokenSrv.URL)
	s, err := NewGCS(context.Background(), "bkt", "ck", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Endpoint() != GCSEndpoint {
		t.Errorf("endpoint %s, want %s", s.Endpoint(), GCSEndpoint)
	}
	s.endpoint = apiSrv.URL
	for range 2 {
		if es, err := s.List(context.Background(), ""); err != nil || len(es) != 1 {
			t.Fatalf("List = %+v, %v", es, err)
		}
	}
	if got := auth.Load(); got != "Bearer tok-1" {
		t.Errorf("Authorization %q", got)
	}
	if n := tokens.Load(); n != 1 {
		t.Errorf("%d token requests, want 1 (the token is reused)", n)
	}
}

// TestGCSCredentialErrors: credentials that cannot be found fail NewGCS with the hint; ones the
// token endpoint refuses fail the first request as a permission error with the hint.
func TestGCSCredentialErrors(t *testing.T) {
	t.Setenv("STORAGE_EMULATOR_HOST", "")
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", filepath.Join(t.TempDir(), "missing.json"))
	_, err := NewGCS(context.Background(), "bkt", "ck", Options{})
	if err == nil || !strings.Contains(err.Error(), "Google credentials for gs://bkt") || !strings.Contains(err.Error(), "gcloud auth application-default login") {
		t.Errorf("NewGCS without credentials = %v", err)
	}

	var calls atomic.Int32
	tokenSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"error":"invalid_grant","error_description":"Invalid JWT Signature."}`)
	}))
	defer tokenSrv.Close()
	gcsServiceAccount(t, tokenSrv.URL)
	s, err := NewGCS(context.Background(), "bkt", "ck", Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	s.endpoint = "http://127.0.0.1:1" // never reached: the token comes first
	_, err = s.ReadFile(context.Background(), "f")
	if !errors.Is(err, fs.ErrPermission) || !strings.Contains(err.Error(), "invalid_grant") || !strings.Contains(err.Error(), "GOOGLE_APPLICATION_CREDENTIALS") {
		t.Errorf("ReadFile with refused credentials = %v", err)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("%d token requests, want 1 (a refusal is final)", n)
	}
}
