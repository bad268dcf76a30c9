package doctor

import (
	"fmt"
	"path"
	"strings"

	"github.com/ckpt-dev/ckpt/internal/shell"
	"github.com/ckpt-dev/ckpt/internal/sinklog"
)

// sinkFiles compares, with Deep, the files the sink's log lists as live with the data files of
// its output directory (sinklog.Verify, the check behind `ckpt sink verify`). It needs the output
// directory: a --sink that names _spark_metadata itself is skipped.
func (r *runner) sinkFiles() error {
	if r.opts.Sink == nil || path.Base(strings.TrimRight(r.opts.Sink.URI(), "/")) == sinklog.Dir {
		return nil
	}
	v, err := sinklog.Verify(r.ctx, r.opts.Sink, sinklog.VerifyOptions{MaxProblems: maxListed})
	if err != nil {
		return fmt.Errorf("verify the file sink's files: %w", err)
	}
	for _, f := range SinkFindings(v, r.opts.SinkLocation) {
		r.add(f)
	}
	return nil
}

// SinkFindings turns a verification into doctor findings, one per code, naming up to 20 files.
// Corrupt log files and entries outside the output are left to doctor's own checks of them.
func SinkFindings(v *sinklog.Verification, sinkLocation string) []Finding {
	sev := map[string]Severity{
		CodeSinkLogBatchMissing:  Error,
		CodeSinkFileMissing:      Error,
		CodeSinkFileSizeMismatch: Error,
		CodeSinkFileExtra:        Info,
	}
	if sinkLocation == "" {
		sinkLocation = "<output>"
	}
	var out []Finding
	for _, code := range []string{CodeSinkLogBatchMissing, CodeSinkFileMissing, CodeSinkFileSizeMismatch, CodeSinkFileExtra} {
		n := v.Counts[code]
		if n == 0 {
			continue
		}
		var files []string
		var first string
		for _, p := range v.Problems {
			if p.Code != code {
				continue
			}
			if first == "" {
				first = p.Message
			}
			if len(files) < maxListed {
				files = append(files, "sink:"+p.Path)
			}
		}
		c, _ := Lookup(code)
		msg := first
		if n > 1 {
			msg = fmt.Sprintf("%d files: %s (and %d more)", n, first, n-1)
		}
		f := Finding{Code: code, Severity: sev[code], Path: files[0], Files: files[1:], Message: msg,
			Explanation: firstParagraph(c.Explanation), Fix: firstParagraph(c.Fix), Commands: []string{}}
		switch code {
		case CodeSinkLogBatchMissing:
			f.Commands = []string{"ckpt sink repair " + shell.Quote(sinkLocation)}
		case CodeSinkFileMissing:
			f.Commands = []string{"ckpt sink repair " + shell.Quote(sinkLocation) + " --drop-missing"}
		case CodeSinkFileExtra:
			f.Commands = []string{"ckpt sink verify " + shell.Quote(sinkLocation) + " -o json"}
		}
		out = append(out, f)
	}
	return out
}
