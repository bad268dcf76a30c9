package exitcode

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

func TestCode(t *testing.T) {
	cases := []struct {
		err  error
		want int
	}{
		{nil, OK},
		{errors.New("disk on fire"), Failure},
		{New(Findings, nil), Findings},
		{fmt.Errorf("wrapped: %w", New(Findings, errors.New("x"))), Findings},
		{UsageError(errors.New("bad")), Usage},
		{errors.New(`unknown command "x" for "ckpt"`), Usage},
		{errors.New("unknown flag: --nope"), Usage},
		{errors.New("accepts 1 arg(s), received 2"), Usage},
	}
	for _, c := range cases {
		if got := Code(c.err); got != c.want {
			t.Errorf("Code(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}

func TestMessage(t *testing.T) {
	if m := Message(Silent(Findings)); m != "" {
		t.Errorf("silent error printed %q", m)
	}
	if m := Message(New(Failure, errors.New("boom"))); m != "boom" {
		t.Errorf("got %q", m)
	}
	if m := Message(nil); m != "" {
		t.Errorf("nil printed %q", m)
	}
}

type mistake struct{ usage bool }

func (m mistake) Error() string      { return "bad value" }
func (m mistake) UsageMistake() bool { return m.usage }

// A logic package's error that says it is the user's mistake is a usage error, also wrapped.
func TestUsageMistake(t *testing.T) {
	if got := Code(fmt.Errorf("--x: %w", mistake{true})); got != Usage {
		t.Errorf("wrapped usage mistake: %d", got)
	}
	if got := Code(mistake{false}); got != Failure {
		t.Errorf("not a usage mistake: %d", got)
	}
}

// A command a signal stopped exits Interrupted whatever code it chose, says which signal, and
// keeps what it had to say (a journal to resume) without the "context canceled" of each call.
func TestStopped(t *testing.T) {
	sig := &Signal{Name: "SIGTERM"}
	halfway := fmt.Errorf("purge stopped half-way: delete offsets/5: %w\nFinish it with `ckpt repair resume J`", context.Canceled)
	cases := []struct {
		err  error
		want string
	}{
		{context.Canceled, "interrupted by SIGTERM: stopped before finishing"},
		{fmt.Errorf("open ck/commits/7: %w", context.Canceled), "interrupted by SIGTERM: open ck/commits/7"},
		{halfway, "interrupted by SIGTERM: purge stopped half-way: delete offsets/5\nFinish it with `ckpt repair resume J`"},
		{New(Findings, errors.New("x")), "interrupted by SIGTERM: x"},
		{fmt.Errorf("%w\nThe destination holds a partial copy", context.Canceled), "interrupted by SIGTERM: stopped before finishing\nThe destination holds a partial copy"},
		{Silent(Findings), "interrupted by SIGTERM: stopped before finishing"},
	}
	for _, c := range cases {
		err := Stopped(sig, c.err)
		if got := Code(err); got != Interrupted {
			t.Errorf("Code(Stopped(%v)) = %d, want %d", c.err, got, Interrupted)
		}
		if got := Message(err); got != c.want {
			t.Errorf("Message(Stopped(%v)) = %q, want %q", c.err, got, c.want)
		}
		if !errors.Is(err, c.err) {
			t.Errorf("Stopped(%v) lost the command's error from the chain", c.err)
		}
	}
}
