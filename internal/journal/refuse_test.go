package journal

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/internal/journal/journaltest"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

func TestRefuseLiveQuery(t *testing.T) {
	ctx := context.Background()
	m := storage.NewMem()
	journaltest.BuildScenario(t, "leftovers", m)
	orig := journaltest.Snapshot(t, m)
	for p := range orig {
		if err := m.SetModTime(p, journaltest.Now.Add(-time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	// The query wrote offsets/7 thirty seconds ago.
	if err := m.SetModTime("offsets/7", journaltest.Now.Add(-30*time.Second)); err != nil {
		t.Fatal(err)
	}
	p, err := newPlan(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	o := execOpts()
	o.ActiveWindow = DefaultActiveWindow
	_, err = Apply(ctx, m, p, o)
	var live *LiveError
	if !errors.As(err, &live) || live.Path != "offsets/7" {
		t.Fatalf("want a LiveError naming offsets/7, got %v", err)
	}
	if d := journaltest.DiffSnapshots(orig, journaltest.Snapshot(t, m)); d != "" {
		t.Fatalf("a refused repair changed the checkpoint:\n%s", d)
	}
	if dirs := journaltest.RepairDirs(t, m); len(dirs) > 0 {
		t.Errorf("a refused repair wrote a journal: %v", dirs)
	}
	// Older than the window: fine. --force: fine, with a warning.
	o.ActiveWindow = 20 * time.Second
	if _, err := Apply(ctx, journaltest.CloneMem(t, m), p, o); err != nil {
		t.Errorf("window 20s: %v", err)
	}
	o.ActiveWindow = DefaultActiveWindow
	o.Force = true
	j, err := Apply(ctx, m, p, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(j.Warnings) == 0 || !strings.Contains(j.Warnings[0], "--force") {
		t.Errorf("--force gave no warning: %q", j.Warnings)
	}
}

func TestRefuseLockHeld(t *testing.T) {
	ctx := context.Background()
	m := storage.NewMem()
	journaltest.BuildScenario(t, "commits-ahead", m)
	orig := journaltest.Snapshot(t, m)
	other := []byte(`{"id":"20290101T000000Z-deadbeef","journal":"mem://x/_ckpt/repairs/20290101T000000Z-deadbeef","op":"repair","host":"elsewhere","pid":42,"acquired":"2029-01-01T00:00:00Z"}`)
	if err := m.WriteFile(ctx, LockPath, other); err != nil {
		t.Fatal(err)
	}
	p, err := newPlan(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Apply(ctx, m, p, execOpts())
	var locked *LockedError
	if !errors.As(err, &locked) || locked.Holder.Host != "elsewhere" {
		t.Fatalf("want a LockedError, got %v", err)
	}
	if !strings.Contains(err.Error(), "ckpt repair resume") || !strings.Contains(err.Error(), "--force") {
		t.Errorf("the message does not tell the way out: %v", err)
	}
	if d := journaltest.DiffSnapshots(orig, journaltest.Snapshot(t, m)); d != "" {
		t.Fatalf("a refused repair changed the checkpoint:\n%s", d)
	}
	if got, _ := m.ReadFile(ctx, LockPath); string(got) != string(other) {
		t.Errorf("the other repair's lock was touched: %s", got)
	}
	o := execOpts()
	o.Force = true
	j, err := Apply(ctx, m, p, o)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(j.Warnings, "\n"), "took over the repair lock held by repair 20290101T000000Z-deadbeef") {
		t.Errorf("warnings: %q", j.Warnings)
	}
	if l, _ := ReadLock(ctx, m); l != nil {
		t.Errorf("lock left: %+v", l)
	}
}

// Two repairs racing for the lock: exactly one gets it (the store's no-overwrite write decides).
func TestLockIsExclusive(t *testing.T) {
	ctx := context.Background()
	m := storage.NewMem()
	a := Lock{ID: "a", Op: "repair", Owner: newOwner(), Host: hostname(), PID: journaltest.DeadPID(t)}
	b := Lock{ID: "b", Op: "repair", Owner: newOwner()}
	if _, _, err := acquireLock(ctx, m, a, lockPolicy{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := acquireLock(ctx, m, b, lockPolicy{takeover: true}); err == nil {
		t.Fatal("second lock acquired")
	}
	// The same repair (resume, undo) takes its own lock over once its holder is gone, and then
	// owns it.
	a2 := Lock{ID: "a", Op: "resume", Owner: newOwner(), Host: hostname(), PID: os.Getpid()}
	_, prev, err := acquireLock(ctx, m, a2, lockPolicy{takeover: true})
	if err != nil {
		t.Fatalf("own lock: %v", err)
	}
	if prev == nil || prev.Owner != a.Owner {
		t.Errorf("the lock taken over = %+v, want a's", prev)
	}
	for _, other := range []Lock{b, a} { // another id; the same id, another owner
		if err := releaseLock(ctx, m, other); err != nil {
			t.Fatal(err)
		}
		if l, _ := ReadLock(ctx, m); l == nil || l.Owner != a2.Owner {
			t.Fatalf("releasing %+v removed the lock of %+v: %+v", other, a2, l)
		}
	}
	// A new repair never takes over a lock, not even one with its own id.
	if _, _, err := acquireLock(ctx, m, Lock{ID: "a", Op: "repair", Owner: newOwner()}, lockPolicy{}); err == nil {
		t.Fatal("a repair with the same id took the lock over")
	}
	if err := releaseLock(ctx, m, a2); err != nil {
		t.Fatal(err)
	}
	if l, _ := ReadLock(ctx, m); l != nil {
		t.Fatalf("the owner's release left %+v", l)
	}
}

// Two `repair --execute` of the same plan in the same second (the same clock here): they get
// different ids; while the first holds the lock the second is refused and leaves that lock in
// place, so a third is refused too.
func TestSamePlanSameSecond(t *testing.T) {
	ctx := context.Background()
	m := storage.NewMem()
	journaltest.BuildScenario(t, "commits-ahead", m)
	p, err := newPlan(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := NewID(journaltest.Now, m.URI(), p.Actions), NewID(journaltest.Now, m.URI(), p.Actions); a == b {
		t.Fatalf("two ids of the same plan in the same second: %s", a)
	}
	// The first repair stops inside its run (blocked on its first journal write) holding the lock.
	f := storage.NewFaulty(m)
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	f.SetHook(func(_ context.Context, op storage.Op, path string) error {
		if op == storage.OpWrite && strings.Contains(path, "/journal/") {
			once.Do(func() { close(entered); <-release })
		}
		return nil
	})
	first := make(chan error, 1)
	go func() {
		_, err := Apply(ctx, f, p, execOpts())
		first <- err
	}()
	<-entered
	held, _ := ReadLock(ctx, m)
	if held == nil {
		t.Fatal("the first repair holds no lock")
	}
	for i := range 2 {
		_, err := Apply(ctx, m, p, execOpts())
		var locked *LockedError
		if !errors.As(err, &locked) {
			t.Fatalf("repair %d alongside the first: %v, want a LockedError", i+2, err)
		}
		if l, _ := ReadLock(ctx, m); l == nil || l.Owner != held.Owner {
			t.Fatalf("repair %d changed the first repair's lock: %+v", i+2, l)
		}
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatalf("the first repair: %v", err)
	}
	if l, _ := ReadLock(ctx, m); l != nil {
		t.Errorf("lock left after the first repair finished: %+v", l)
	}
}

func TestConfine(t *testing.T) {
	m := storage.NewMem()
	ok := []string{"offsets/5", "commits/12", "offsets/.5.crc", "commits/.3.0f1e.tmp", ".metadata.crc", "offsets/+5"}
	for _, p := range ok {
		if err := Confine(m, p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	bad := []string{
		"", "metadata", "sources/0/0", "state/0/0/1.delta", "offsets", "offsets/", "/offsets/5",
		"../offsets/5", "offsets/../metadata", "offsets/../../etc/passwd", "offsets//5", "offsets/./5",
		"offsets/5/..", `offsets\5`, "offsets/5\x00", "_ckpt/lock", "offsets/sub/5", "x/offsets/5",
	}
	for _, p := range bad {
		err := Confine(m, p)
		if !errors.Is(err, ErrOutside) || !errors.Is(err, storage.ErrInvalidPath) {
			t.Errorf("%q: want ErrOutside, got %v", p, err)
		}
	}
}

// A plan whose action names a path outside what repair may touch is refused before any change,
// whatever produced it (a journal edited by hand, a bug).
func TestRefusePathEscape(t *testing.T) {
	ctx := context.Background()
	m := storage.NewMem()
	journaltest.BuildScenario(t, "leftovers", m)
	orig := journaltest.Snapshot(t, m)
	for _, p := range []string{"../outside", "offsets/../metadata", "sources/0/0", "metadata"} {
		plan := &Plan{Actions: []Action{{Op: OpDelete, Path: p, Before: "x"}}}
		if _, err := Apply(ctx, m, plan, execOpts()); !errors.Is(err, ErrOutside) {
			t.Errorf("%s: want ErrOutside, got %v", p, err)
		}
		copyPlan := &Plan{Actions: []Action{{Op: OpCopy, Path: "offsets/99", From: p}}}
		if _, err := Apply(ctx, m, copyPlan, execOpts()); !errors.Is(err, ErrOutside) {
			t.Errorf("copy from %s: want ErrOutside, got %v", p, err)
		}
	}
	if d := journaltest.DiffSnapshots(orig, journaltest.Snapshot(t, m)); d != "" {
		t.Fatalf("the checkpoint changed:\n%s", d)
	}
	if l, _ := ReadLock(ctx, m); l != nil || len(journaltest.RepairDirs(t, m)) > 0 {
		t.Error("a refused plan took the lock or wrote a journal")
	}
}

// On local disk, a log file or directory that is a symbolic link is refused, even when it points
// inside the checkpoint: deleting or restoring through a link would act on another file.
func TestRefuseSymlinks(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	outside := t.TempDir()
	s, err := storage.NewLocal(filepath.Join(root, "ckpt"))
	if err != nil {
		t.Fatal(err)
	}
	journaltest.BuildScenario(t, "leftovers", s)
	target := filepath.Join(outside, "precious")
	if err := os.WriteFile(target, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A leftover-looking temp file that is a link to a file outside the checkpoint.
	link := filepath.Join(root, "ckpt", "offsets", ".9.3f0c2a9e-1b7d-4c55-9e61-0a2b4c6d8e11.tmp")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := Confine(s, "offsets/.9.3f0c2a9e-1b7d-4c55-9e61-0a2b4c6d8e11.tmp"); !errors.Is(err, ErrOutside) {
		t.Errorf("symlinked file: %v", err)
	}
	p, err := newPlan(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Apply(ctx, s, p, execOpts())
	if !errors.Is(err, ErrOutside) {
		t.Fatalf("want ErrOutside for the symlinked temp file, got %v", err)
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "keep me" {
		t.Fatalf("the link target was touched: %q %v", b, err)
	}
	if _, err := os.Lstat(link); err != nil {
		t.Fatalf("the link was removed: %v", err)
	}

	// commits/ itself is a link to a directory outside.
	s2root := filepath.Join(root, "ckpt2")
	s2, err := storage.NewLocal(s2root)
	if err != nil {
		t.Fatal(err)
	}
	journaltest.BuildScenario(t, "commits-ahead", s2)
	moved := filepath.Join(outside, "commits")
	if err := os.Rename(filepath.Join(s2root, "commits"), moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(moved, filepath.Join(s2root, "commits")); err != nil {
		t.Fatal(err)
	}
	if err := Confine(s2, "commits/7"); !errors.Is(err, ErrOutside) {
		t.Errorf("symlinked directory: %v", err)
	}
}

// The directory check is made once per directory of a run, the link check of each file every
// time: a link in offsets/ is refused after a plain file of offsets/ confirmed the directory.
func TestConfineCachedDirStillChecksFiles(t *testing.T) {
	root := t.TempDir()
	s, err := storage.NewLocal(root)
	if err != nil {
		t.Fatal(err)
	}
	journaltest.BuildScenario(t, "commits-ahead", s)
	if err := os.Symlink(filepath.Join(t.TempDir(), "x"), filepath.Join(root, "offsets", "99")); err != nil {
		t.Fatal(err)
	}
	c := newConfinedDirs()
	if err := confine(s, "offsets/0", c); err != nil {
		t.Fatal(err)
	}
	if !c.has(root + "\x00" + filepath.Join(root, "offsets")) {
		t.Fatal("offsets/ was not remembered as confirmed")
	}
	if err := confine(s, "offsets/99", c); !errors.Is(err, ErrOutside) {
		t.Fatalf("a link in a confirmed directory: %v, want ErrOutside", err)
	}
}

// A plan may create a new state version (`ckpt state repartition`), never replace one, and a
// write to state/ is only ever to a versioned state file.
func TestStateWriteCreateOnly(t *testing.T) {
	ctx := context.Background()
	m := storage.NewMem()
	journaltest.BuildScenario(t, "leftovers", m)
	if err := m.WriteFile(ctx, "state/0/0/1.delta", []byte("old")); err != nil {
		t.Fatal(err)
	}
	orig := journaltest.Snapshot(t, m)
	for _, p := range []string{"state/0/0/1.delta", "state/0/0/_metadata/schema", "state/0/x/2.snapshot"} {
		a := Action{Op: OpWrite, Path: p, Data: []byte("new"), After: DigestOf([]byte("new")), Size: 3}
		if _, err := Apply(ctx, m, &Plan{Actions: []Action{a}}, execOpts()); err == nil {
			t.Errorf("write of %s applied", p)
		}
	}
	if d := journaltest.DiffSnapshots(orig, journaltest.Snapshot(t, m)); d != "" {
		t.Fatalf("the checkpoint changed:\n%s", d)
	}
	a := Action{Op: OpWrite, Path: "state/0/3/2.snapshot", Data: []byte("new")}
	if err := Fill(ctx, m, &a); err != nil {
		t.Fatal(err)
	}
	if err := checkAction(stores{cp: m, dirs: newConfinedDirs()}, a); err != nil {
		t.Errorf("a new state version is refused: %v", err)
	}
}
