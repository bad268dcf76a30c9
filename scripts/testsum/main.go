// Command testsum is scripts/test.sh's reporter (the logic is internal/testsum):
//
//	go test -json ... | testsum run -stage NAME -out FILE   # a line per package, failures, FILE: the counts
//	testsum stage -name NAME -seconds S [-failed] -out FILE # a stage that runs no Go tests
//	testsum report FILE...                                  # the summary; last line: N passed, N failed, N skipped
//
// run exits 1 when a test or a package failed; report exits 1 when any stage failed.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/ckpt-dev/ckpt/internal/testsum"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: testsum run|stage|report ...")
		os.Exit(2)
	}
	var err error
	code := 0
	switch os.Args[1] {
	case "run":
		code, err = run(os.Args[2:])
	case "stage":
		err = stage(os.Args[2:])
	case "report":
		code, err = report(os.Args[2:])
	default:
		err = fmt.Errorf("unknown subcommand %q: want run, stage or report", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsum:", err)
		os.Exit(2)
	}
	os.Exit(code)
}

func run(args []string) (int, error) {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	name := fs.String("stage", "go test", "stage name")
	out := fs.String("out", "", "file to write the stage's counts to (JSON)")
	if err := fs.Parse(args); err != nil {
		return 0, err
	}
	start := time.Now()
	st, err := testsum.Summarise(os.Stdin, os.Stdout, *name)
	if err != nil {
		return 0, err
	}
	st.Seconds = time.Since(start).Seconds()
	fmt.Printf("%s: %s in %s\n", *name, st.Counts, time.Since(start).Round(time.Second))
	if err := write(*out, st); err != nil {
		return 0, err
	}
	if st.Counts.Failed > 0 {
		return 1, nil
	}
	return 0, nil
}

func stage(args []string) error {
	fs := flag.NewFlagSet("stage", flag.ContinueOnError)
	name := fs.String("name", "", "stage name")
	secs := fs.Float64("seconds", 0, "how long the stage took")
	failed := fs.Bool("failed", false, "the stage failed (counts as one failure)")
	passed := fs.Int("passed", 0, "checks passed (fuzz targets)")
	out := fs.String("out", "", "file to write the stage to (JSON)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	st := testsum.Stage{Name: *name, Seconds: *secs, Counts: testsum.Counts{Passed: *passed}}
	if *failed {
		st.Counts.Failed = 1
		st.Failures = []string{"the stage exited with an error (its output is above)"}
	}
	return write(*out, st)
}

func report(files []string) (int, error) {
	var stages []testsum.Stage
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return 0, err
		}
		var st testsum.Stage
		if err := json.Unmarshal(b, &st); err != nil {
			return 0, fmt.Errorf("%s: %w", f, err)
		}
		stages = append(stages, st)
	}
	if testsum.Report(os.Stdout, stages).Failed > 0 {
		return 1, nil
	}
	return 0, nil
}

func write(file string, st testsum.Stage) error {
	if file == "" {
		return nil
	}
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	return os.WriteFile(file, b, 0o644)
}
