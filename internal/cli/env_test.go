package cli

import (
	"context"
	"strings"
	"testing"
)

// The stores read the environment through Env.Getenv, not the process's: a command's
// environment is its Env's.
func TestOpenStoreReadsEnvGetenv(t *testing.T) {
	t.Setenv("CKPT_STORE_TIMEOUT", "45s") // the process's: must not be read
	env := &Env{Getenv: func(k string) string {
		if k == "CKPT_STORE_TIMEOUT" {
			return "soon"
		}
		return ""
	}}
	_, err := env.OpenStore(context.Background(), "gs://bucket/ckpt")
	if err == nil || !strings.Contains(err.Error(), `CKPT_STORE_TIMEOUT="soon"`) {
		t.Fatalf("err = %v, want the Env's CKPT_STORE_TIMEOUT refused", err)
	}
}
