package change

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/exitcode"
	"github.com/ckpt-dev/ckpt/internal/iostreams"
	"github.com/ckpt-dev/ckpt/internal/journal"
	"github.com/ckpt-dev/ckpt/internal/journal/journaltest"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/render"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// commitsAhead is the commits-ahead scenario with the plan that deletes the commits above the
// offsets, predicted.
func commitsAhead(t *testing.T) (*storage.Mem, *journal.Plan) {
	t.Helper()
	ctx := context.Background()
	m := storage.NewMem()
	journaltest.BuildScenario(t, "commits-ahead", m)
	cp, err := checkpoint.Load(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	as := []journal.Action{{Op: journal.OpDelete, Path: "commits/7", Reason: "ahead"}, {Op: journal.OpDelete, Path: "commits/6", Reason: "ahead"}}
	after, err := journal.Predict(ctx, cp, as, recovery.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return m, &journal.Plan{Strategy: "test", Actions: as, After: after}
}

type doc struct {
	Plan string `json:"plan"`
	Outcome
	Verified    *recovery.Result `json:"verified"`
	SinkJournal *string          `json:"sinkJournal,omitempty"`
}

func change(m storage.Store, p *journal.Plan, jsonOut bool, f *Flags, d *doc) (Change, *iostreams.IOStreams, *bytes.Buffer) {
	io, _, out, _ := iostreams.Test()
	return Change{
		Proposal: Proposal{JSON: jsonOut, Doc: d, Print: func() { io.Out.Write([]byte("the plan\n")) }, What: "test",
			Pending: len(p.Actions) > 0, Execute: f.Execute},
		Env:      Env{IO: io, Now: func() time.Time { return journaltest.Now }, Version: "test"},
		Flags:    f,
		Store:    m,
		Plan:     p,
		Question: "Apply?",
		Outcome:  &d.Outcome,
		Verified: &d.Verified,
	}, io, out
}

// Run applies with --execute --yes and writes the document with the journal, the verified
// restart and the sink journal (the same journal); without --execute it changes nothing.
func TestRunAppliesAndDocuments(t *testing.T) {
	ctx := context.Background()
	m, p := commitsAhead(t)
	orig := journaltest.Snapshot(t, m)
	d := &doc{Plan: "p"}
	c, io, out := change(m, p, true, &Flags{}, d)
	if err := Run(ctx, render.New(io), c); err != nil {
		t.Fatal(err)
	}
	if d := journaltest.DiffSnapshots(orig, journaltest.Snapshot(t, m)); d != "" {
		t.Fatalf("a dry run changed the checkpoint:\n%s", d)
	}
	if got := out.String(); !strings.Contains(got, `"executed": false`) || !strings.Contains(got, `"journal": null`) {
		t.Fatalf("dry run document: %s", got)
	}

	d = &doc{Plan: "p"}
	c, io, out = change(m, p, true, &Flags{Execute: true, Yes: true}, d)
	c.SinkJournal = &d.SinkJournal
	c.Closing = func(*journal.Record) { t.Error("closing lines printed with -o json") }
	if err := Run(ctx, render.New(io), c); err != nil {
		t.Fatal(err)
	}
	var got doc
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if !got.Executed || got.Journal == nil || got.SinkJournal == nil || *got.SinkJournal != *got.Journal || got.Verified == nil {
		t.Fatalf("document after --execute: %+v", got)
	}
	if _, err := m.Stat(ctx, "commits/7"); err == nil {
		t.Fatal("commits/7 is still there")
	}
}

// A refused plan is shown and exits 1; a plan needing a prompt without a terminal is a usage
// error; a sink half that fails says what was not done and still writes the document.
func TestRunRefusalsAndSinkFailure(t *testing.T) {
	ctx := context.Background()
	m, p := commitsAhead(t)
	d := &doc{}
	c, io, out := change(m, p, false, &Flags{Execute: true, Yes: true}, d)
	c.Refused = "no"
	err := Run(ctx, render.New(io), c)
	if exitcode.Code(err) != exitcode.Failure || !strings.Contains(err.Error(), "test refused: no") || !strings.Contains(out.String(), "the plan") {
		t.Fatalf("refused plan: %v (exit %d), output %q", err, exitcode.Code(err), out)
	}

	c, io, _ = change(m, p, false, &Flags{Execute: true}, &doc{})
	if err := Run(ctx, render.New(io), c); exitcode.Code(err) != exitcode.Usage {
		t.Fatalf("--execute without --yes and without a terminal: %v", err)
	}

	d = &doc{}
	c, io, out = change(m, &journal.Plan{}, true, &Flags{Execute: true, Yes: true}, d)
	bad := journal.Action{Op: journal.OpDelete, Path: "state/x", Reason: "outside"}
	c.Pending = true
	c.Sink = &SinkChange{Store: storage.NewMem(), Plan: &journal.Plan{Actions: []journal.Action{bad}}, Question: "Sink?",
		Journal: &d.SinkJournal, Failed: "the sink was not changed", Closing: func(*journal.Record) { t.Error("closing after a failure") }}
	err = Run(ctx, render.New(io), c)
	if err == nil || !strings.HasPrefix(err.Error(), "the sink was not changed: ") || !errors.Is(err, journal.ErrOutside) {
		t.Fatalf("failed sink half: %v", err)
	}
	if out := out.String(); !strings.Contains(out, `"executed": false`) {
		t.Fatalf("no document after the sink's failure: %q", out)
	}
}
