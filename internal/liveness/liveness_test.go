package liveness

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/internal/storage"
)

// deadPID starts and reaps a process, so its pid is (for a while) one no process has.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

func TestJudge(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	stopped := now.Add(-time.Second)
	cases := []struct {
		name string
		r    Record
		want State
	}{
		{"this process, fresh heartbeat", Record{Host: "here", PID: os.Getpid(), Heartbeat: now.Add(-5 * time.Second)}, Alive},
		{"this process, heartbeat stale (pid reused?)", Record{Host: "here", PID: os.Getpid(), Heartbeat: now.Add(-time.Hour)}, Unknown},
		{"killed process, fresh heartbeat", Record{Host: "here", PID: deadPID(t), Heartbeat: now}, Dead},
		{"stopped cleanly", Record{Host: "here", PID: os.Getpid(), Heartbeat: now, Stopped: &stopped}, Dead},
		{"other host, fresh", Record{Host: "there", PID: 1, Heartbeat: now.Add(-5 * time.Second)}, Alive},
		{"other host, stale", Record{Host: "there", PID: 1, Heartbeat: now.Add(-time.Minute)}, Dead},
	}
	for _, c := range cases {
		if got := Judge(&c.r, now, "here"); got.State != c.want {
			t.Errorf("%s: %v (%s), want %v", c.name, got.State, got.Reason, c.want)
		}
	}
}

func TestHoldRelease(t *testing.T) {
	ctx := context.Background()
	s := storage.NewMem()
	if r, err := Read(ctx, s); r != nil || err != nil {
		t.Fatalf("empty store: %v %v", r, err)
	}
	h, err := Hold(ctx, s, Options{Tool: "ckpt test", Sink: "kafka", Interval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	r, err := Read(ctx, s)
	if err != nil || r == nil || r.PID != os.Getpid() || r.Sink != "kafka" || r.Stopped != nil {
		t.Fatalf("record while running: %+v %v", r, err)
	}
	first := r.Heartbeat
	deadline := time.Now().Add(5 * time.Second)
	for {
		r, _ = Read(ctx, s)
		if r != nil && r.Heartbeat.After(first) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the heartbeat never advanced")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	r, err = Read(ctx, s)
	if err != nil || r == nil || r.Stopped == nil {
		t.Fatalf("record after release: %+v %v", r, err)
	}
	host, _ := os.Hostname()
	if v := Judge(r, time.Now(), host); v.State != Dead {
		t.Fatalf("released record judged %v", v.State)
	}
}
