package doctor

import (
	"fmt"
	"net/url"
	"path"
	"path/filepath"
	"strings"

	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/sinklog"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// sinkLocation is a file location split so that local paths and S3 keys compare alike: scheme
// "file" for local paths (Spark writes "file:/out/part-0", a hand-written log "/out/part-0"),
// "s3" for s3, s3a and s3n.
type sinkLocation struct {
	scheme, host, path string
}

func (l sinkLocation) under(dir sinkLocation) bool {
	return l.scheme == dir.scheme && l.host == dir.host && strings.HasPrefix(l.path, strings.TrimSuffix(dir.path, "/")+"/")
}

func (l sinkLocation) String() string {
	if l.scheme == "file" {
		return l.path
	}
	return l.scheme + "://" + l.host + l.path
}

// parseSinkPath splits a path as a sink log records it. traversal reports a ".." element, which
// Spark never writes.
func parseSinkPath(p string) (loc sinkLocation, traversal bool) {
	for _, el := range strings.Split(p, "/") {
		if el == ".." {
			traversal = true
		}
	}
	if strings.Contains(p, ":") {
		if u, err := url.Parse(p); err == nil && u.Scheme != "" && len(u.Scheme) > 1 {
			scheme := strings.ToLower(u.Scheme)
			switch scheme {
			case "s3a", "s3n":
				scheme = "s3"
			}
			p := u.Path
			if p == "" {
				p = u.Opaque
			}
			return sinkLocation{scheme: scheme, host: u.Host, path: path.Clean("/" + p)}, traversal
		}
	}
	return sinkLocation{scheme: "file", path: path.Clean("/" + p)}, traversal || !strings.HasPrefix(p, "/")
}

// sinkOutputDir is the output directory of the sink store: its root, or the parent of the
// _spark_metadata directory it names. ok is false for stores whose locations Spark does not
// write (mem://).
func sinkOutputDir(s storage.Store, logDir string) (sinkLocation, bool) {
	switch st := s.(type) {
	case *storage.Local:
		root := st.Root()
		if logDir == "" {
			root = filepath.Dir(root)
		}
		return sinkLocation{scheme: "file", path: path.Clean(filepath.ToSlash(root))}, true
	case *storage.S3:
		p := "/" + st.Prefix()
		if logDir == "" {
			p = path.Dir(p)
		}
		return sinkLocation{scheme: "s3", host: st.Bucket(), path: path.Clean(p)}, true
	case *storage.GCS, *storage.Azure, *storage.HDFS:
		// Their locations are written as Spark writes the sink's paths (gs://bucket/out,
		// abfss://c@acct.dfs.core.windows.net/out, hdfs://nn:8020/out).
		loc, _ := parseSinkPath(strings.TrimRight(s.URI(), "/"))
		if logDir == "" {
			loc.path = path.Dir(loc.path)
		}
		return loc, loc.scheme != "file"
	}
	return sinkLocation{}, false
}

// sinkEntries reports add entries of the file sink's log that point outside its output directory
// (CodeSinkEntryOutside). The log is streamed, so it costs one read of the files allFiles reads.
func (r *runner) sinkEntries() error {
	if r.opts.Sink == nil {
		return nil
	}
	logDir := sinklog.Locate(r.opts.Sink.URI())
	type entry struct {
		file      string
		path      string
		loc       sinkLocation
		traversal bool
	}
	var entries []entry // only what a finding may need: capped below
	const keep = 10000
	dirs := map[sinkLocation]int{}
	out, outOK := sinkOutputDir(r.opts.Sink, logDir)
	underOut := 0
	total := 0
	var outside []entry
	_, err := sinklog.Walk(r.ctx, r.opts.Sink, logDir, func(file string, e *logformat.SinkFileStatus) {
		if e.Action == sinklog.ActionDelete {
			return
		}
		total++
		loc, trav := parseSinkPath(e.Path)
		en := entry{file: file, path: e.Path, loc: loc, traversal: trav}
		if trav {
			outside = append(outside, en)
			return
		}
		if outOK && loc.under(out) {
			underOut++
			return
		}
		dirs[partitionBase(loc)]++
		if len(entries) < keep {
			entries = append(entries, en)
		}
	})
	if err != nil {
		return fmt.Errorf("read the file sink log: %w", err)
	}
	base, baseOK := out, outOK
	if underOut == 0 && len(dirs) > 0 {
		// The output was copied or moved: the directory most entries share stands for it.
		best, n := sinkLocation{}, 0
		for d, c := range dirs {
			if c > n || (c == n && d.String() < best.String()) {
				best, n = d, c
			}
		}
		base, baseOK = best, true
	}
	if baseOK {
		for _, e := range entries {
			if !e.loc.under(base) && e.loc != base {
				outside = append(outside, e)
			}
		}
	}
	if len(outside) == 0 {
		return nil
	}
	var shown, files []string
	seenFile := map[string]bool{}
	for _, e := range outside {
		if len(shown) < 5 {
			shown = append(shown, fmt.Sprintf("%q (in %s)", e.path, path.Join(sinklog.Dir, path.Base(e.file))))
		}
		if !seenFile[e.file] {
			seenFile[e.file] = true
			files = append(files, "sink:"+path.Join(sinklog.Dir, path.Base(e.file)))
		}
	}
	more := ""
	if len(outside) > len(shown) {
		more = fmt.Sprintf(" and %d more", len(outside)-len(shown))
	}
	what := "1 file"
	if len(outside) > 1 {
		what = fmt.Sprintf("%d files", len(outside))
	}
	r.add(Finding{
		Code: CodeSinkEntryOutside, Severity: Error, Path: files[0], Files: files,
		Message: fmt.Sprintf("the file sink's log lists %s outside its output directory %s: %s%s", what, base, strings.Join(shown, ", "), more),
		Explanation: "Readers of a file sink take the list of files from _spark_metadata, so these entries make them read files that are not " +
			"this query's output. Spark never writes a path outside the output directory: the log was edited or copied from another query.",
		Fix: "Restore _spark_metadata from a backup, and do not read the output through its log until then.",
	})
	return nil
}

// partitionBase is the directory of a file with trailing partition directories ("k=v") removed:
// the output directory a file sink wrote it below.
func partitionBase(l sinkLocation) sinkLocation {
	d := path.Dir(l.path)
	for d != "/" && strings.Contains(path.Base(d), "=") {
		d = path.Dir(d)
	}
	l.path = d
	return l
}
