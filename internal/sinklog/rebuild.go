package sinklog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"time"

	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// RebuildOptions configures PlanRebuild.
type RebuildOptions struct {
	// DefaultInterval is spark.sql.streaming.fileSink.log.compactInterval, used only when the log
	// has no compaction file left (0: DefaultCompactInterval, 10).
	DefaultInterval int
	// DropMissing leaves out of the rebuilt file the entries whose data file is gone from the
	// output (default false: they are kept, and verify reports them).
	DropMissing bool
	// Retention is the file sink's "retention" option (Spark 3.1+): entries whose
	// modificationTime is older than Now minus Retention are left out, as Spark's compaction
	// does. 0: no retention (Spark's default).
	Retention time.Duration
	// Now is the clock for Retention (nil: time.Now).
	Now func() time.Time
}

// Rebuild is the plan of `ckpt sink repair`: the compaction files to write again.
type Rebuild struct {
	CompactInterval int   `json:"compactInterval"`
	Latest          int64 `json:"latest"`
	// Compacts are the files rebuilt; Unrepairable says what cannot be rebuilt and why.
	Compacts     []CompactRebuild `json:"compacts"`
	Unrepairable []string         `json:"unrepairable"`
}

// CompactRebuild is one compaction file rebuilt by Spark's rules: the entries of the previous
// compaction and of every batch since, then the batch's own, minus deleted paths.
type CompactRebuild struct {
	Batch int64 `json:"batch"`
	// Path is the file to create ("_spark_metadata/19.compact"); Reason "missing", "corrupt", or
	// "drop-missing" (a sound file rewritten without the entries whose data files are gone).
	Path   string `json:"path"`
	Reason string `json:"reason"`
	// Replaces is the file the rebuilt one replaces (its original moves into the backup, with
	// its checksum file CRC, if any); "" when Path is missing.
	Replaces string `json:"replaces,omitempty"`
	CRC      string `json:"crc,omitempty"`
	// From are the log files read, in Spark's order.
	From []string `json:"from"`
	// Entries and Bytes describe the rebuilt file's entries (all adds) and their data size.
	Entries int64 `json:"entries"`
	Bytes   int64 `json:"bytes"`
	// Salvaged counts entries read from the damaged file that no other file holds (the batch's
	// own entries, readable up to the damage).
	Salvaged int `json:"salvaged"`
	// MissingData counts entries whose data file is gone from the output (kept unless
	// DropMissing); Dropped lists the entries DropMissing left out, and Expired counts
	// entries Retention left out.
	MissingData int      `json:"missingData"`
	Dropped     []string `json:"dropped"`
	Expired     int      `json:"expired"`
	// Warnings say what the rebuilt file cannot hold.
	Warnings []string `json:"warnings"`
	// Data are the bytes to write, as Spark serializes a compaction file.
	Data []byte `json:"-"`
}

// PlanRebuild finds the compaction files Spark's allFiles needs that are missing or do not
// parse, and rebuilds each from the files before it. It writes nothing.
func PlanRebuild(ctx context.Context, store storage.Store, opts RebuildOptions) (*Rebuild, error) {
	def := opts.DefaultInterval
	if def <= 0 {
		def = DefaultCompactInterval
	}
	l, err := list(ctx, store, Dir)
	if err != nil {
		return nil, err
	}
	b := &builder{ctx: ctx, store: store, l: l, opts: opts}
	b.interval, _ = CompactInterval(l.compacts, def)
	rb := &Rebuild{CompactInterval: b.interval, Latest: -1, Compacts: []CompactRebuild{}, Unrepairable: []string{}}
	if len(l.batches) == 0 {
		return rb, nil
	}
	rb.Latest = l.batches[len(l.batches)-1]
	var present map[string]bool
	var res *Resolver
	sp, ok := ValidBatches(rb.Latest, b.interval)
	if !ok {
		return rb, nil
	}
	fix := func(id int64, reason string) error {
		c, why, err := b.rebuild(id, reason)
		if err != nil {
			return err
		}
		if why != "" {
			rb.Unrepairable = append(rb.Unrepairable, why)
			return nil
		}
		if present == nil {
			present, res, err = b.presence(c)
			if err != nil {
				return err
			}
		}
		b.finish(c, present, res)
		rb.Compacts = append(rb.Compacts, *c)
		return nil
	}
	ids, missing := b.l.present(sp)
	// Only the first valid batch can be a compaction batch: the span ends before the next.
	if len(missing) > 0 && missing[0].First == sp.First && IsCompactionBatch(sp.First, b.interval) {
		if err := fix(sp.First, "missing"); err != nil {
			return nil, err
		}
		if missing[0].First == missing[0].Last {
			missing = missing[1:]
		} else {
			missing[0].First++
		}
	}
	// Runs, not ids: a run may hold 2^63 of them.
	for _, m := range missing {
		if m.First == m.Last {
			rb.Unrepairable = append(rb.Unrepairable, fmt.Sprintf("%s/%d is gone: it is a batch's own log file, whose entries no other file holds", Dir, m.First))
			continue
		}
		rb.Unrepairable = append(rb.Unrepairable, fmt.Sprintf("%s/%d to %s/%d are gone (%d files): each is a batch's own log file, whose entries no other file holds", Dir, m.First, Dir, m.Last, m.Len()))
	}
	for _, id := range ids {
		p := b.l.files[id]
		compact := IsCompactionBatch(id, b.interval)
		if _, err := b.read(p); err == nil {
			continue
		} else if !isFormatError(err) {
			return nil, err
		} else if !compact || path.Base(p) != fmt.Sprint(id)+CompactSuffix {
			rb.Unrepairable = append(rb.Unrepairable, fmt.Sprintf("%s does not parse (%v): it is a batch's own log file, whose entries no other file holds", p, err))
			continue
		}
		if err := fix(id, "corrupt"); err != nil {
			return nil, err
		}
	}
	if opts.DropMissing {
		if err := b.dropMissing(rb, present, res); err != nil {
			return nil, err
		}
	}
	return rb, nil
}

type builder struct {
	ctx      context.Context
	store    storage.Store
	l        *listing
	opts     RebuildOptions
	interval int
	entries  []logformat.SinkFileStatus // the last rebuilt compaction's live entries
}

// read parses one log file whole.
func (b *builder) read(p string) ([]logformat.SinkFileStatus, error) {
	rc, err := b.store.Open(b.ctx, p)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	// One file's cost is capped (logformat.MaxFileBytes), as every checkpoint read is.
	data, err := io.ReadAll(io.LimitReader(rc, logformat.MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > logformat.MaxFileBytes {
		return nil, logformat.TooLarge(p, int64(len(data)))
	}
	lg, err := logformat.ParseSinkLog(p, data)
	if err != nil {
		return nil, err
	}
	return lg.Entries, nil
}

// collect returns the entries (before compactLogs) of compaction id, reading the previous
// compaction, or rebuilding it in memory when it is damaged too, and the batches between.
// why is set when a file it needs is gone or damaged.
func (b *builder) collect(id int64, depth int, from *[]string) (entries []logformat.SinkFileStatus, why string, err error) {
	iv := int64(b.interval)
	prev := id - iv
	if prev >= 0 {
		p := path.Join(Dir, fmt.Sprint(prev)+CompactSuffix)
		es, err := b.read(p)
		switch {
		case err == nil:
			*from = append(*from, p)
			entries = append(entries, es...)
		case (errors.Is(err, fs.ErrNotExist) || isFormatError(err)) && depth < 64:
			es, why, err := b.collect(prev, depth+1, from)
			if err != nil || why != "" {
				return nil, why, err
			}
			entries = append(entries, compactLogs(es)...)
		case errors.Is(err, fs.ErrNotExist) || isFormatError(err):
			return nil, fmt.Sprintf("%s cannot be rebuilt: too many damaged compaction files before it", p), nil
		default:
			return nil, "", err
		}
	}
	for bid := max(prev+1, 0); bid < id; bid++ {
		p := path.Join(Dir, fmt.Sprint(bid))
		es, err := b.read(p)
		if errors.Is(err, fs.ErrNotExist) || isFormatError(err) {
			return nil, fmt.Sprintf("%s/%d%s cannot be rebuilt: %s, one of the files it is made of, is %s", Dir, id, CompactSuffix, p, damage(err)), nil
		}
		if err != nil {
			return nil, "", err
		}
		*from = append(*from, p)
		entries = append(entries, es...)
	}
	return entries, "", nil
}

func damage(err error) string {
	if errors.Is(err, fs.ErrNotExist) {
		return "gone"
	}
	return "damaged (" + err.Error() + ")"
}

// rebuild computes compaction id.
func (b *builder) rebuild(id int64, reason string) (*CompactRebuild, string, error) {
	name := fmt.Sprint(id) + CompactSuffix
	c := &CompactRebuild{Batch: id, Path: path.Join(Dir, name), Reason: reason, From: []string{}, Dropped: []string{}, Warnings: []string{}}
	entries, why, err := b.collect(id, 0, &c.From)
	if err != nil || why != "" {
		return nil, why, err
	}
	own := false
	if reason == "corrupt" {
		b.replaces(c)
		// Salvage what parses before the damage: the batch's own entries were only here.
		seen := map[logformat.SinkFileStatus]bool{}
		for _, e := range entries {
			seen[e] = true
		}
		salvaged, err := b.salvage(c.Path)
		if err != nil {
			return nil, "", err
		}
		for _, e := range salvaged {
			if !seen[e] {
				seen[e] = true
				entries = append(entries, e)
				c.Salvaged++
			}
		}
		own = c.Salvaged > 0
	}
	// Spark writes the batch's own entries straight into the compaction file; a plain file of the
	// same id (left by an older interval) holds them too.
	plain := path.Join(Dir, fmt.Sprint(id))
	if es, err := b.read(plain); err == nil {
		c.From = append(c.From, plain)
		entries = append(entries, es...)
		own = true
	}
	if !own {
		c.Warnings = append(c.Warnings, fmt.Sprintf("batch %d's own entries were only in %s: the rebuilt file holds the batches before it, "+
			"so batch %d's data files stay invisible to readers (verify lists them as %s)", id, name, id, CodeFileExtra))
	}
	b.entries = entries
	return c, "", nil
}

// replaces marks c as replacing the file at its path, with its checksum file.
func (b *builder) replaces(c *CompactRebuild) {
	c.Replaces = c.Path
	crc := path.Join(Dir, "."+path.Base(c.Path)+".crc")
	if _, err := b.store.Stat(b.ctx, crc); err == nil {
		c.CRC = crc
	}
}

// dropMissing rewrites the latest compaction file Spark reads, when it is sound and lists data
// files that are gone (DropMissing). Entries of the batch files after it cannot be dropped: each
// is a batch's own record.
func (b *builder) dropMissing(rb *Rebuild, present map[string]bool, res *Resolver) error {
	valid, ok := ValidBatches(rb.Latest, b.interval)
	if !ok || !IsCompactionBatch(valid.First, b.interval) {
		return nil
	}
	id := valid.First
	for _, c := range rb.Compacts {
		if c.Batch == id {
			return nil
		}
	}
	p, ok := b.l.files[id]
	if !ok || path.Base(p) != fmt.Sprint(id)+CompactSuffix {
		return nil
	}
	es, err := b.read(p)
	if err != nil {
		return nil // missing or damaged: the rebuild above handles it, or says why not
	}
	if present == nil {
		b.entries = es
		present, res, err = b.presence(nil)
		if err != nil {
			return err
		}
	}
	c := &CompactRebuild{Batch: id, Path: p, Reason: "drop-missing", From: []string{p}, Dropped: []string{}, Warnings: []string{}}
	b.entries = es
	b.finish(c, present, res)
	if len(c.Dropped) == 0 {
		return nil
	}
	b.replaces(c)
	rb.Compacts = append(rb.Compacts, *c)
	return nil
}

// salvage reads the entries of a damaged file up to its first error.
func (b *builder) salvage(p string) ([]logformat.SinkFileStatus, error) {
	rc, err := b.store.Open(b.ctx, p)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	r, err := logformat.NewSinkLogReader(p, rc)
	if isFormatError(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []logformat.SinkFileStatus
	for {
		e, err := r.Next()
		if errors.Is(err, io.EOF) || isFormatError(err) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
}

// presence lists the data files in the output once, for MissingData and DropMissing, and
// resolves the entries collected last.
func (b *builder) presence(*CompactRebuild) (map[string]bool, *Resolver, error) {
	files, err := b.store.Walk(b.ctx, "")
	if err != nil {
		return nil, nil, err
	}
	present := map[string]bool{}
	for _, f := range files {
		if !f.IsDir && !Hidden(f.Path) {
			present[f.Path] = true
		}
	}
	var paths []string
	for _, e := range b.entries {
		paths = append(paths, e.Path)
	}
	return present, NewResolver(b.store.URI(), paths), nil
}

// finish applies compactLogs, retention and DropMissing to the collected entries and
// serializes the file.
func (b *builder) finish(c *CompactRebuild, present map[string]bool, res *Resolver) {
	live := compactLogs(b.entries)
	var cutoff int64
	if b.opts.Retention > 0 {
		now := time.Now
		if b.opts.Now != nil {
			now = b.opts.Now
		}
		cutoff = now().Add(-b.opts.Retention).UnixMilli()
	}
	out := make([]logformat.SinkFileStatus, 0, len(live))
	for _, e := range live {
		if cutoff != 0 && e.ModificationTime < cutoff {
			c.Expired++
			continue
		}
		if rel, ok := res.Rel(e.Path); !e.IsDir && (!ok || !present[rel]) {
			if b.opts.DropMissing {
				c.Dropped = append(c.Dropped, e.Path)
				continue
			}
			c.MissingData++
		}
		out = append(out, e)
		c.Entries++
		c.Bytes += e.Size
	}
	if c.MissingData > 0 {
		c.Warnings = append(c.Warnings, fmt.Sprintf("%d entr(ies) name data files that are gone from the output; they are kept (readers fail on them): "+
			"--drop-missing leaves them out", c.MissingData))
	}
	c.Data = (&logformat.SinkLog{Version: 1, Entries: out}).Marshal()
}

// compactLogs is FileStreamSinkLog.compactLogs: every entry whose path a delete names goes,
// the deletes with it.
func compactLogs(es []logformat.SinkFileStatus) []logformat.SinkFileStatus {
	deleted := map[string]bool{}
	for _, e := range es {
		if e.Action == ActionDelete {
			deleted[e.Path] = true
		}
	}
	if len(deleted) == 0 {
		return es
	}
	out := make([]logformat.SinkFileStatus, 0, len(es))
	for _, e := range es {
		if !deleted[e.Path] {
			out = append(out, e)
		}
	}
	return out
}
