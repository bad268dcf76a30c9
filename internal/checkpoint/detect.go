package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/sinklog"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// LocationKind names what a location holds, as Detect sees it.
type LocationKind string

// The kinds of location Detect tells apart. Only KindCheckpoint is a checkpoint; every command
// that reads one refuses the others with what it found (Require), so a typo never reads as "a new
// query, nothing wrong".
const (
	KindCheckpoint LocationKind = "checkpoint" // offsets/, commits/ or a metadata file
	KindMissing    LocationKind = "missing"    // nothing there (on S3: no key has the prefix)
	KindEmpty      LocationKind = "empty"      // an existing directory with nothing in it
	KindFile       LocationKind = "file"       // a plain file, not a directory
	KindUnrelated  LocationKind = "unrelated"  // a directory holding neither a checkpoint nor checkpoints
	KindParent     LocationKind = "parent"     // a directory with checkpoints below it
	KindLogDir     LocationKind = "log-dir"    // offsets/, commits/, sources/ or state/ of a checkpoint
	KindSinkOutput LocationKind = "sink-output"
	KindSinkLog    LocationKind = "sink-log" // a file sink's _spark_metadata directory (or a copy)
)

// Location is the result of Detect.
type Location struct {
	Kind LocationKind `json:"kind"`
	// URI is the location as given to the store.
	URI string `json:"uri"`
	// Checkpoints are the checkpoints found below a KindParent location, relative paths, sorted
	// (at most two levels down, and at most detectListings listings).
	Checkpoints []string `json:"checkpoints,omitempty"`
	// Partial is set when the search for Checkpoints stopped at its budget.
	Partial bool `json:"partial,omitempty"`
	// LogDir is the directory name of a KindLogDir location ("offsets"); Parent is the checkpoint
	// location above it.
	LogDir string `json:"logDir,omitempty"`
	Parent string `json:"parent,omitempty"`
	// Names are the first few entries of a KindUnrelated location; Entries counts them all.
	Names   []string `json:"names,omitempty"`
	Entries int      `json:"entries"`
	// root is the listing of the root Detect made, for LoadAt: a command that checks the
	// location and then loads it lists the root once.
	root []storage.Entry
}

// detectListings bounds the listings Detect makes to look for checkpoints below a directory: a
// parent of a few dozen queries is found in one go, a data lake is not crawled.
const detectListings = 64

// detectNames is how many names of an unrelated directory the message quotes.
const detectNames = 5

// Detect says what the location of store holds, from one listing of its root (plus a Stat when it
// is empty, and listings of sub-directories when it is not a checkpoint). It is the one place
// that decides whether a location is a checkpoint; every command asks it (through Require).
func Detect(ctx context.Context, s storage.Store) (*Location, error) {
	loc := &Location{URI: s.URI()}
	entries, err := s.List(ctx, "")
	if err != nil {
		return nil, err
	}
	loc.Entries = len(entries)
	loc.root = entries
	if len(entries) == 0 {
		e, err := s.Stat(ctx, "")
		switch {
		case errors.Is(err, fs.ErrNotExist):
			loc.Kind = KindMissing
		case err != nil:
			return nil, err
		case !e.IsDir:
			loc.Kind = KindFile
		default:
			loc.Kind = KindEmpty
		}
		return loc, nil
	}
	if IsCheckpoint(entries) {
		loc.Kind = KindCheckpoint
		return loc, nil
	}
	base := uriBase(loc.URI)
	switch base {
	case DirOffsets, DirCommits, DirSources, DirState:
		loc.Kind, loc.LogDir, loc.Parent = KindLogDir, base, uriParent(loc.URI)
		return loc, nil
	case sinklog.Dir:
		loc.Kind = KindSinkLog
		return loc, nil
	}
	var dirs []string
	var latest string
	latestID := int64(-1)
	for _, e := range entries {
		name := path.Base(e.Path)
		switch {
		case e.IsDir && name == sinklog.Dir:
			loc.Kind = KindSinkOutput
			return loc, nil
		case e.IsDir:
			dirs = append(dirs, e.Path)
		default:
			if n := logformat.ParseName(name); (n.Kind == logformat.NameBatch || n.Kind == logformat.NameCompact) && n.Batch > latestID {
				latest, latestID = e.Path, n.Batch
			}
		}
		if len(loc.Names) < detectNames {
			if e.IsDir {
				name += "/"
			}
			loc.Names = append(loc.Names, name)
		}
	}
	if latest != "" && holdsSinkEntries(ctx, s, latest) {
		loc.Kind = KindSinkLog
		return loc, nil
	}
	if len(dirs) > 0 {
		found, partial, err := findBelow(ctx, s, dirs)
		if err != nil {
			return nil, err
		}
		if len(found) > 0 {
			loc.Kind, loc.Checkpoints, loc.Partial = KindParent, found, partial
			loc.Names = nil
			return loc, nil
		}
	}
	loc.Kind = KindUnrelated
	return loc, nil
}

// IsCheckpoint is the rule, applied to a directory listing: a checkpoint root has offsets/ or
// commits/, or the metadata file Spark writes before the first batch. Detect and the fleet mode
// (internal/fleet) both apply it.
func IsCheckpoint(entries []storage.Entry) bool {
	for _, e := range entries {
		switch name := path.Base(e.Path); {
		case e.IsDir && (name == DirOffsets || name == DirCommits):
			return true
		case !e.IsDir && name == FileMetadata:
			return true
		}
	}
	return false
}

// findBelow looks for checkpoints in dirs and, when none is one, one level further down, with at
// most detectListings listings made 8 at a time.
func findBelow(ctx context.Context, s storage.Store, dirs []string) (found []string, partial bool, err error) {
	budget := detectListings
	for depth := 0; depth < 2 && len(dirs) > 0; depth++ {
		if len(dirs) > budget {
			dirs, partial = dirs[:budget], true
		}
		budget -= len(dirs)
		type res struct {
			cp   bool
			subs []string
			err  error
		}
		out := make([]res, len(dirs))
		var wg sync.WaitGroup
		sem := make(chan struct{}, 8)
		for i, d := range dirs {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				es, err := s.List(ctx, d)
				if err != nil {
					out[i].err = err
					return
				}
				if IsCheckpoint(es) {
					out[i].cp = true
					return
				}
				for _, e := range es {
					if e.IsDir {
						out[i].subs = append(out[i].subs, e.Path)
					}
				}
			}()
		}
		wg.Wait()
		var next []string
		for i, r := range out {
			if r.err != nil {
				return nil, false, r.err
			}
			if r.cp {
				found = append(found, dirs[i])
			}
			next = append(next, r.subs...)
		}
		if len(found) > 0 {
			// The checkpoints of this level; deeper ones are the fleet mode's business.
			slices.Sort(found)
			return found, partial, nil
		}
		dirs = next
	}
	return nil, partial, nil
}

// holdsSinkEntries reads the first entry of a batch file: a renamed copy of a _spark_metadata
// directory is still a sink log when its entries carry a sink action. Any failure means no.
func holdsSinkEntries(ctx context.Context, s storage.Store, file string) bool {
	rc, err := s.Open(ctx, file)
	if err != nil {
		return false
	}
	defer rc.Close()
	r, err := logformat.NewSinkLogReader(file, rc)
	if err != nil {
		return false
	}
	e, err := r.Next()
	return err == nil && (e.Action == "add" || e.Action == "delete")
}

// uriBase is the last element of a path or URI, ignoring trailing separators.
func uriBase(uri string) string {
	uri = strings.TrimRight(uri, `/\`)
	if i := strings.LastIndexAny(uri, `/\`); i >= 0 {
		return uri[i+1:]
	}
	return uri
}

// uriParent is the location one element up, spelled as the user spelled uri.
func uriParent(uri string) string {
	uri = strings.TrimRight(uri, `/\`)
	i := strings.LastIndexAny(uri, `/\`)
	switch {
	case i < 0:
		return "."
	case i == 0:
		return uri[:1]
	}
	return uri[:i]
}

// ChildURI joins a relative path found by Detect to the location's URI.
func ChildURI(uri, rel string) string {
	return strings.TrimRight(uri, `/\`) + "/" + rel
}

// NotCheckpointError is the refusal of a location that is not a checkpoint: it says what the
// location holds and what to run instead.
type NotCheckpointError struct {
	Location *Location
	// Command is the command that refused ("ckpt doctor"), for the suggestions.
	Command string
	// AllowEmptyFlag says that the command has --allow-empty, so the message may offer it.
	AllowEmptyFlag bool
}

// Error is one message: what was expected, what was found, what to do.
func (e *NotCheckpointError) Error() string {
	l := e.Location
	cmd := e.Command
	if cmd == "" {
		cmd = "ckpt doctor"
	}
	head := "no checkpoint at " + l.URI + ": "
	allow := ""
	if e.AllowEmptyFlag {
		allow = " (--allow-empty treats it as a new query that has not started)"
	}
	switch l.Kind {
	case KindMissing:
		if strings.HasPrefix(l.URI, "s3") {
			return head + "no object has this prefix (check the bucket and the prefix)"
		}
		return head + "the path does not exist"
	case KindFile:
		return head + "it is a file, not a checkpoint directory"
	case KindEmpty:
		return head + "the directory is empty" + allow
	case KindLogDir:
		return fmt.Sprintf("%sthis is the %s/ directory of a checkpoint; pass the directory above it:\n  %s %s", head, l.LogDir, cmd, l.Parent)
	case KindSinkOutput:
		return head + "this is a file sink's output directory (it holds " + sinklog.Dir + "/); pass it with --sink next to the query's checkpoint, or run ckpt inspect on it"
	case KindSinkLog:
		return head + "this is a file sink's log (" + sinklog.Dir + "), not a checkpoint; run ckpt inspect on it"
	case KindParent:
		var b strings.Builder
		more := ""
		if l.Partial {
			more = " (the search stopped early; there may be more)"
		}
		fmt.Fprintf(&b, "%s%s is a folder holding %d checkpoint(s)%s:\n", head, l.URI, len(l.Checkpoints), more)
		for _, c := range l.Checkpoints {
			fmt.Fprintf(&b, "  %s\n", ChildURI(l.URI, c))
		}
		// The fleet mode (--recursive) of the command itself where it has one, doctor's otherwise.
		fleet, verb := "ckpt doctor", "diagnose"
		switch cmd {
		case "ckpt inspect":
			fleet, verb = cmd, "inspect"
		case "ckpt lag":
			fleet, verb = cmd, "show the lag of"
		}
		fmt.Fprintf(&b, "%s them all with:\n  %s --recursive %s\nor one of them with:\n  %s %s", verb, fleet, l.URI, cmd, ChildURI(l.URI, l.Checkpoints[0]))
		return b.String()
	}
	names := strings.Join(l.Names, ", ")
	if l.Entries > len(l.Names) {
		names += fmt.Sprintf(" and %d more", l.Entries-len(l.Names))
	}
	return fmt.Sprintf("%sit holds %s, but no offsets/, commits/ or metadata%s", head, names, allow)
}

// RequireOptions are Require's choices.
type RequireOptions struct {
	// AllowEmpty accepts an empty or unrelated directory as a checkpoint that has not started
	// (--allow-empty). A missing path is refused all the same. Default: refuse.
	AllowEmpty bool
	// Command names the caller in the suggestions ("ckpt replay"). Default: "ckpt doctor".
	Command string
	// AllowEmptyFlag says that the caller has --allow-empty, so the refusal may offer it.
	AllowEmptyFlag bool
}

// Require returns nil when store holds a checkpoint (or, with AllowEmpty, nothing a checkpoint
// could be confused with yet), and otherwise a *NotCheckpointError.
func Require(ctx context.Context, s storage.Store, opts RequireOptions) (*Location, error) {
	loc, err := Detect(ctx, s)
	if err != nil {
		return nil, err
	}
	switch loc.Kind {
	case KindCheckpoint:
		return loc, nil
	case KindEmpty, KindUnrelated:
		if opts.AllowEmpty {
			return loc, nil
		}
	}
	return loc, &NotCheckpointError{Location: loc, Command: opts.Command, AllowEmptyFlag: opts.AllowEmptyFlag}
}
