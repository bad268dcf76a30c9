package exitcode

import (
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
