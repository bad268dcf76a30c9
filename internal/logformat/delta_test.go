package logformat

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// deltaFixtureOffsets returns the Delta source lines of the offsets files real Spark wrote
// (testdata/delta, pyspark 3.5.8 with delta-spark 3.3.2).
func deltaFixtureOffsets(t testing.TB) []string {
	files, err := filepath.Glob("../../testdata/delta/*/checkpoint/offsets/[0-9]*")
	if err != nil || len(files) == 0 {
		t.Fatalf("no Delta fixture offsets: %v", err)
	}
	var lines []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		seq, err := ParseOffsets(f, data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, s := range seq.Sources {
			if strings.Contains(s.JSON, "reservoirId") {
				lines = append(lines, s.JSON)
			}
		}
	}
	if len(lines) < 6 {
		t.Fatalf("only %d Delta offsets in the fixtures", len(lines))
	}
	return lines
}

func TestParseDeltaSourceOffsetFixtures(t *testing.T) {
	for _, line := range deltaFixtureOffsets(t) {
		o, err := ParseDeltaSourceOffset("f", line)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		if o.SourceVersion != 1 || o.ReservoirID == "" || o.Index != DeltaBaseIndex || o.IsStartingVersion {
			t.Errorf("unexpected offset %+v from %s", o, line)
		}
		// delta-spark's serializer writes exactly these bytes.
		if got := o.JSON(); got != line {
			t.Errorf("JSON() = %s, Spark wrote %s", got, line)
		}
		if !IsDeltaSourceOffset(line) {
			t.Errorf("IsDeltaSourceOffset(%s) = false", line)
		}
	}
}

func TestParseDeltaSourceOffsetErrors(t *testing.T) {
	const id = `"reservoirId":"a","reservoirVersion":3,"index":-1,"isStartingVersion":false`
	cases := []struct {
		in, spark string
	}{
		{`{"sourceVersion":2,` + id + `}`, "[DELTA_INVALID_SOURCE_VERSION] sourceVersion(2) is invalid"},
		{`{"sourceVersion":0,` + id + `}`, "[DELTA_INVALID_SOURCE_VERSION] sourceVersion(0) is invalid"},
		{`{` + id + `}`, "[DELTA_INVALID_SOURCE_VERSION] sourceVersion(0) is invalid"},
		{`{"sourceVersion":4,` + id + `}`, "[DELTA_INVALID_FORMAT_FROM_SOURCE_VERSION] Unsupported format. Expected version should be smaller than or equal to 3 but was 4. Please upgrade to newer version of Delta."},
		{`{"sourceVersion":"1",` + id + `}`, DeltaInvalidSourceOffsetFormat},
		{`{"sourceVersion":1,` + id, DeltaInvalidSourceOffsetFormat},
		{`{"sourceVersion":1,"reservoirId":"a","index":1,"isStartingVersion":true}`, ""},
	}
	for _, c := range cases {
		_, err := ParseDeltaSourceOffset("offsets/3", c.in)
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("%s: error %v is not *Error", c.in, err)
		}
		if e.File != "offsets/3" || e.Spark != c.spark {
			t.Errorf("%s: file %q, Spark text %q, want %q", c.in, e.File, e.Spark, c.spark)
		}
	}
	// Version 3 (a schema-change index) and unknown keys are read, as delta-spark does.
	o, err := ParseDeltaSourceOffset("f", `{"sourceVersion":3,"reservoirId":"x\u0041","reservoirVersion":7,"index":-20,"isStartingVersion":true,"extra":[1]}`)
	if err != nil || o.ReservoirID != "xA" || o.Index != -20 || !o.IsStartingVersion || o.ReservoirVersion != 7 {
		t.Fatalf("got %+v, %v", o, err)
	}
	if IsDeltaSourceOffset(`{"t":{"0":1}}`) || IsDeltaSourceOffset(`{"logOffset":3}`) || IsDeltaSourceOffset(`7`) {
		t.Error("IsDeltaSourceOffset accepts a Kafka, file or long offset")
	}
}

func FuzzParseDeltaSourceOffset(f *testing.F) {
	for _, l := range deltaFixtureOffsets(f) {
		f.Add([]byte(l))
	}
	addStrings(f, "", "{}", `{"reservoirId":1}`, `{"sourceVersion":3,"reservoirId":"\ud800","reservoirVersion":-9223372036854775808,"index":-20,"isStartingVersion":true}`)
	f.Fuzz(func(t *testing.T, data []byte) {
		o, err := ParseDeltaSourceOffset("f", string(data))
		if err != nil {
			checkParseError(t, err)
			return
		}
		stable(t, o, func(o DeltaSourceOffset) []byte { return []byte(o.JSON()) },
			func(b []byte) (DeltaSourceOffset, error) { return ParseDeltaSourceOffset("f", string(b)) },
			func(o DeltaSourceOffset) DeltaSourceOffset { return o })
		if !IsDeltaSourceOffset(string(data)) {
			t.Fatalf("parsed but IsDeltaSourceOffset is false: %q", data)
		}
	})
}
