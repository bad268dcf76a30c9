package inspect

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/internal/storage"
)

func TestTmpParallelism(t *testing.T) {
	if os.Getenv("CKPT_BENCH_DIR") == "" {
		t.Skip()
	}
	s, _ := storage.NewLocal(os.Getenv("CKPT_BENCH_DIR") + "/ckpt")
	for _, p := range []int{1, 2, 4, 16, 1, 16} {
		t0 := time.Now()
		if _, err := Batches(context.Background(), s, BatchesOptions{Parallelism: p}); err != nil {
			t.Fatal(err)
		}
		t1 := time.Now()
		readAll(&testing.B{}, os.Getenv("CKPT_BENCH_DIR")+"/ckpt")
		t.Logf("parallelism %d: batches %s, readall %s", p, t1.Sub(t0).Round(time.Millisecond), time.Since(t1).Round(time.Millisecond))
	}
}
