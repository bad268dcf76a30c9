package logformat

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

const meta = `{"batchWatermarkMs":0,"batchTimestampMs":1489085905815}`

// wantErr describes the *Error a case must produce.
type wantErr struct {
	line  int
	kind  Kind
	spark string
	// version/max are checked for KindUnsupportedVersion.
	version, max int
}

func checkErr(t *testing.T, name, file string, err error, w wantErr) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("%s: want *Error %v, got %v", name, w.kind, err)
	}
	if e.File != file || e.Line != w.line || e.Kind != w.kind || e.Spark != w.spark {
		t.Errorf("%s: got file=%q line=%d kind=%v spark=%q\n want file=%q line=%d kind=%v spark=%q",
			name, e.File, e.Line, e.Kind, e.Spark, file, w.line, w.kind, w.spark)
	}
	if w.kind == KindUnsupportedVersion && (e.Version != w.version || e.MaxVersion != w.max) {
		t.Errorf("%s: version %d max %d, want %d %d", name, e.Version, e.MaxVersion, w.version, w.max)
	}
	if e.Expected == "" || e.Got == "" {
		t.Errorf("%s: Expected and Got must be filled: %#v", name, e)
	}
	if !strings.HasPrefix(e.Error(), file+": ") {
		t.Errorf("%s: message %q does not start with the file", name, e.Error())
	}
}

func unsupported(v, max int) wantErr {
	return wantErr{line: 1, kind: KindUnsupportedVersion, spark: SparkUnsupportedVersion(v, max), version: v, max: max}
}

func malformed(text string) wantErr {
	return wantErr{line: 1, kind: KindMalformedVersion, spark: SparkMalformedVersion(text)}
}

func TestErrorMessage(t *testing.T) {
	_, err := ParseOffsets("offsets/7", nil)
	want := `offsets/7: line 1: expected a version header like "v1", got "" (Spark: Incomplete log file)`
	if err == nil || err.Error() != want {
		t.Fatalf("got %v\nwant %s", err, want)
	}
	e := &Error{File: "f", Kind: KindBadJSON, Expected: "x", Got: `"y"`}
	if e.Error() != `f: expected x, got "y"` {
		t.Errorf("whole-file message: %s", e.Error())
	}
	if got := excerpt(strings.Repeat("é", 100)); len(got) > maxExcerpt+10 || !strings.HasSuffix(got, `"...`) {
		t.Errorf("excerpt not truncated: %s", got)
	}
	if KindMalformedVersion.String() != "malformed-version" || Kind(99).String() != "kind(99)" {
		t.Errorf("Kind.String")
	}
}

func TestOffsetsErrors(t *testing.T) {
	const file = "offsets/7"
	cases := []struct {
		name string
		in   string
		want wantErr
	}{
		{"empty file", "", wantErr{line: 1, kind: KindEmpty, spark: "Incomplete log file"}},
		{"header only", "v1", wantErr{line: 2, kind: KindMissingMetadata, spark: sparkNoSuchElement}},
		{"header and newline only", "v1\n", wantErr{line: 2, kind: KindMissingMetadata, spark: sparkNoSuchElement}},
		{"v0", "v0\n" + meta + "\n2", malformed("v0")},
		{"v", "v\n" + meta, malformed("v")},
		{"v-1", "v-1\n" + meta, malformed("v-1")},
		{"no v", "1\n" + meta, malformed("1")},
		{"empty header line", "\n" + meta, malformed("")},
		{"trailing space in header", "v1 \n" + meta + "\n2", malformed("v1 ")},
		{"leading space in header", " v1\n" + meta, malformed(" v1")},
		{"overflowing version", "v2147483648\n" + meta, malformed("v2147483648")},
		{"v99", "v99\n" + meta + "\n2", unsupported(99, OffsetsMaxVersion)},
		{"v3", "v3\n" + meta, unsupported(3, 2)},
		{"truncated JSON", "v1\n{\"batchWatermarkMs\":0,\"batchT", wantErr{line: 2, kind: KindBadJSON}},
		{"metadata not an object", "v1\n[1]\n2", wantErr{line: 2, kind: KindBadJSON}},
		{"watermark not a number", "v1\n{\"batchWatermarkMs\":\"0\"}\n2", wantErr{line: 2, kind: KindBadJSON}},
		{"watermark fraction", "v1\n{\"batchWatermarkMs\":1.5}\n2", wantErr{line: 2, kind: KindBadJSON}},
		{"conf value not a string", "v1\n{\"conf\":{\"a\":1}}\n2", wantErr{line: 2, kind: KindBadJSON}},
		{"trailing garbage after JSON", "v1\n{} x\n2", wantErr{line: 2, kind: KindBadJSON}},
		{"v2 line without colon", "v2\n" + meta + "\n5",
			wantErr{line: 3, kind: KindMalformed, spark: `Invalid OffsetMap format: 5`}},
		{"v2 blank line", "v2\n" + meta + "\n0:1\n\n1:2",
			wantErr{line: 4, kind: KindBlankLine, spark: "Invalid OffsetMap format: "}},
		{"invalid UTF-8", "v1\n" + meta + "\n\xff", wantErr{line: 3, kind: KindMalformed,
			spark: "java.nio.charset.MalformedInputException"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o, err := ParseOffsets(file, []byte(c.in))
			if err == nil {
				t.Fatalf("parsed %+v, want an error", o)
			}
			checkErr(t, c.name, file, err, c.want)
		})
	}
}

func TestOffsetsAccepted(t *testing.T) {
	// "v+1": Integer.parseInt accepts a plus sign.
	o, err := ParseOffsets("f", []byte("v+1\n"+meta+"\n2"))
	if err != nil || o.Version != 1 {
		t.Fatalf("v+1: %v %+v", err, o)
	}
	if got := string(o.Marshal()); got != "v1\n"+meta+"\n2" {
		t.Errorf("v+1 normalises to v1, got %q", got)
	}
	// Unicode digits: Character.digit accepts them, so does Spark.
	if o, err := ParseOffsets("f", []byte("v١\n"+meta+"\n2")); err != nil || o.Version != 1 {
		t.Errorf("arabic-indic digit: %v", err)
	}

	// An extra blank line becomes a source with empty JSON and is flagged.
	in := "v1\n" + meta + "\n2\n\n"
	o, err = ParseOffsets("offsets/3", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Sources) != 2 || o.Sources[1] != (SourceOffset{}) || !reflect.DeepEqual(o.BlankLines, []int{4}) ||
		!o.TrailingNewline {
		t.Errorf("blank line: %+v", o)
	}
	if string(o.Marshal()) != in {
		t.Errorf("blank line round trip: %q", o.Marshal())
	}
	errs := o.BlankLineErrors("offsets/3")
	if len(errs) != 1 {
		t.Fatalf("BlankLineErrors: %v", errs)
	}
	checkErr(t, "blank line error", "offsets/3", errs[0], wantErr{line: 4, kind: KindBlankLine})

	// A blank line between sources.
	o, err = ParseOffsets("f", []byte("v1\n"+meta+"\n\n-"))
	if err != nil || !reflect.DeepEqual(o.BlankLines, []int{3}) || !o.Sources[1].Void {
		t.Errorf("middle blank line: %v %+v", err, o)
	}

	// A single trailing newline is harmless and reproduced.
	in = "v1\n" + meta + "\n2\n"
	o, err = ParseOffsets("f", []byte(in))
	if err != nil || len(o.Sources) != 1 || o.BlankLines != nil || !o.TrailingNewline || string(o.Marshal()) != in {
		t.Errorf("trailing newline: %v %+v", err, o)
	}

	// CRLF and CR: Scala getLines splits on both; Marshal writes "\n".
	for _, sep := range []string{"\r\n", "\r"} {
		in := strings.Join([]string{"v1", meta, "2", "-"}, sep)
		o, err := ParseOffsets("f", []byte(in))
		if err != nil {
			t.Fatalf("%q: %v", sep, err)
		}
		if o.CRBreaks != 3 || len(o.Sources) != 2 || o.Sources[0].JSON != "2" || !o.Sources[1].Void ||
			o.Metadata.BatchTimestampMs != 1489085905815 || o.BlankLines != nil {
			t.Errorf("%q: %+v", sep, o)
		}
		if got := string(o.Marshal()); got != "v1\n"+meta+"\n2\n-" {
			t.Errorf("%q: Marshal %q", sep, got)
		}
	}

	// Empty and white-space metadata lines mean "no metadata" (Spark trims).
	for _, md := range []string{"", "  \t"} {
		o, err := ParseOffsets("f", []byte("v1\n"+md+"\n2"))
		if err != nil || o.Metadata != nil || o.Sources[0].JSON != "2" {
			t.Errorf("metadata %q: %v %+v", md, err, o)
		}
	}

	// v2 (master): sourceId:offset lines; v2 metadata keeps unknown keys.
	in = "v2\n{\"batchWatermarkMs\":1,\"batchTimestampMs\":2,\"conf\":{\"a\":\"b\"}," +
		"\"sourceMetadataInfo\":{\"0\":{\"sourceId\":\"0\"}}}\n0:{\"logOffset\":3}\n1:-"
	o, err = ParseOffsets("f", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if o.Version != 2 || o.Sources[0] != (SourceOffset{SourceID: "0", JSON: `{"logOffset":3}`}) ||
		o.Sources[1] != (SourceOffset{SourceID: "1", Void: true}) || len(o.Metadata.Extra) != 1 ||
		o.Metadata.Extra[0].Key != "sourceMetadataInfo" {
		t.Errorf("v2: %+v %+v", o, o.Metadata)
	}
	if string(o.Marshal()) != in {
		t.Errorf("v2 round trip: %q", o.Marshal())
	}
	if n, err := ParseFileSourceOffset("f", o.Sources[0].JSON); err != nil || n != 3 {
		t.Errorf("file source offset: %d %v", n, err)
	}
}

func TestCommitErrors(t *testing.T) {
	const file = "commits/4"
	cases := []struct {
		name string
		in   string
		want wantErr
	}{
		{"empty file", "", wantErr{line: 1, kind: KindEmpty, spark: "Incomplete log file in the offset commit log"}},
		{"v0", "v0\n{}", malformed("v0")},
		{"v", "v", malformed("v")},
		{"no v", "1\n{}", malformed("1")},
		{"v99", "v99\n{}", unsupported(99, CommitsMaxVersion)},
		{"v4", "v4", unsupported(4, 3)},
		{"blank JSON line", "v1\n\n", wantErr{line: 2, kind: KindBlankLine}},
		{"truncated JSON", "v1\n{\"nextBatchWatermarkMs\":5", wantErr{line: 2, kind: KindBadJSON}},
		{"watermark is a string", "v1\n{\"nextBatchWatermarkMs\":\"5\"}", wantErr{line: 2, kind: KindBadJSON}},
		{"invalid UTF-8", "v1\n{\"a\":\"\xc3\"}", wantErr{line: 2, kind: KindMalformed,
			spark: "java.nio.charset.MalformedInputException"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cm, err := ParseCommit(file, []byte(c.in))
			if err == nil {
				t.Fatalf("parsed %+v, want an error", cm)
			}
			checkErr(t, c.name, file, err, c.want)
		})
	}
}

func TestCommitAccepted(t *testing.T) {
	// Header only: Spark reads "{}".
	c, err := ParseCommit("f", []byte("v1"))
	if err != nil || !c.HeaderOnly || c.HasNextBatchWatermark || string(c.Marshal()) != "v1" {
		t.Errorf("header only: %v %+v", err, c)
	}
	c, err = ParseCommit("f", []byte("v2\n"))
	if err != nil || !c.HeaderOnly || c.Version != 2 || string(c.Marshal()) != "v2\n" {
		t.Errorf("header + newline: %v %+v", err, c)
	}
	// CommitLog trims the version line, unlike OffsetSeqLog.
	c, err = ParseCommit("f", []byte("v1 \n{\"nextBatchWatermarkMs\":7}"))
	if err != nil || c.NextBatchWatermarkMs != 7 {
		t.Errorf("trailing space in commit header: %v", err)
	}
	// CRLF.
	c, err = ParseCommit("f", []byte("v1\r\n{\"nextBatchWatermarkMs\":7}\r\n"))
	if err != nil || c.NextBatchWatermarkMs != 7 || c.CRBreaks != 2 || !c.TrailingNewline {
		t.Errorf("CRLF commit: %v %+v", err, c)
	}
	if got := string(c.Marshal()); got != "v1\n{\"nextBatchWatermarkMs\":7}\n" {
		t.Errorf("CRLF commit Marshal: %q", got)
	}
	// v3 with sinkMetadataMap and an unknown key; lines after the JSON are
	// ignored by Spark but kept.
	in := "v3\n{\"nextBatchWatermarkMs\":0,\"stateUniqueIds\":{\"1\":[[\"a\",\"b\"],[]]}," +
		"\"sinkMetadataMap\":{\"s\":{\"sinkName\":\"x\"}},\"future\":[1,2]}\njunk"
	c, err = ParseCommit("f", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if c.Version != 3 || string(c.SinkMetadata) != `{"s":{"sinkName":"x"}}` || len(c.Extra) != 1 ||
		!reflect.DeepEqual(c.IgnoredLines, []string{"junk"}) || string(c.Marshal()) != in {
		t.Errorf("v3: %+v\n%s", c, c.Marshal())
	}
	ids, err := c.StateIDs()
	if err != nil || !reflect.DeepEqual(ids, map[int64][][]string{1: {{"a", "b"}, {}}}) {
		t.Errorf("StateIDs: %v %v", ids, err)
	}
	c.StateUniqueIDs = []byte(`{"x":[]}`)
	if _, err := c.StateIDs(); err == nil {
		t.Errorf("StateIDs must reject a non-numeric operator id")
	}
}

func TestCompactibleLogErrors(t *testing.T) {
	const file = "_spark_metadata/9"
	entry := `{"path":"/a/b/9","size":900,"isDir":false,"modificationTime":900,"blockReplication":3,"blockSize":200,"action":"add"}`
	cases := []struct {
		name string
		in   string
		want wantErr
	}{
		{"empty file", "", wantErr{line: 1, kind: KindEmpty, spark: "Incomplete log file"}},
		{"v0", "v0\n" + entry, malformed("v0")},
		{"trailing space in header", "v1 \n" + entry, malformed("v1 ")},
		{"v2", "v2\n" + entry, unsupported(2, 1)},
		{"blank line", "v1\n" + entry + "\n\n", wantErr{line: 3, kind: KindBlankLine}},
		{"blank line in the middle", "v1\n\n" + entry, wantErr{line: 2, kind: KindBlankLine}},
		{"truncated entry", "v1\n" + entry[:40], wantErr{line: 2, kind: KindBadJSON}},
		{"missing field", "v1\n" + strings.Replace(entry, `"size":900,`, "", 1), wantErr{line: 2, kind: KindBadJSON,
			spark: "No usable value for size\nDid not find value which can be converted into long"}},
		{"wrong type", "v1\n" + strings.Replace(entry, `false`, `"no"`, 1), wantErr{line: 2, kind: KindBadJSON}},
		{"replication overflows Int", "v1\n" + strings.Replace(entry, `"blockReplication":3`,
			`"blockReplication":3000000000`, 1), wantErr{line: 2, kind: KindBadJSON}},
		{"invalid UTF-8", "v1\n" + strings.Replace(entry, "/a/b/9", "/a/\xffb", 1), wantErr{line: 2,
			kind: KindMalformed, spark: "java.nio.charset.MalformedInputException"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseSinkLog(file, []byte(c.in))
			checkErr(t, c.name, file, err, c.want)
			// The streaming reader must report the same error.
			r, err := NewSinkLogReader(file, strings.NewReader(c.in))
			for err == nil {
				_, err = r.Next()
			}
			if err == io.EOF {
				t.Fatalf("streaming reader accepted the input")
			}
			checkErr(t, c.name+" (reader)", file, err, c.want)
		})
	}

	// CRLF sink log.
	l, err := ParseSinkLog(file, []byte("v1\r\n"+entry+"\r\n"))
	if err != nil || len(l.Entries) != 1 || l.CRBreaks != 2 || !l.TrailingNewline {
		t.Errorf("CRLF sink log: %v %+v", err, l)
	}

	// File source log.
	src := `{"path":"/a/b/3","timestamp":1480730950000,"batchId":3}`
	for _, c := range []struct {
		name, in string
		want     wantErr
	}{
		{"empty", "", wantErr{line: 1, kind: KindEmpty, spark: "Incomplete log file"}},
		{"v2", "v2\n" + src, unsupported(2, 1)},
		{"blank", "v1\n" + src + "\n\n", wantErr{line: 3, kind: KindBlankLine}},
		{"missing batchId", "v1\n{\"path\":\"p\",\"timestamp\":1}", wantErr{line: 2, kind: KindBadJSON,
			spark: "No usable value for batchId\nDid not find value which can be converted into long"}},
	} {
		_, err := ParseFileSourceLog("sources/0/3", []byte(c.in))
		checkErr(t, "file source "+c.name, "sources/0/3", err, c.want)
		r, err := NewFileSourceLogReader("sources/0/3", strings.NewReader(c.in))
		for err == nil {
			_, err = r.Next()
		}
		checkErr(t, "file source reader "+c.name, "sources/0/3", err, c.want)
	}
}

func TestKafkaErrors(t *testing.T) {
	const file = "sources/0/0"
	json := `{"t":{"0":5}}`
	cases := []struct {
		name string
		in   string
		want wantErr
	}{
		{"empty file", "", wantErr{kind: KindEmpty, spark: "requirement failed"}},
		{"lead byte only", "\x00", wantErr{kind: KindEmpty, spark: "requirement failed"}},
		{"no version line end", "\x00v1", wantErr{line: 1, kind: KindMalformed,
			spark: "Log file was malformed: failed to detect the log file version line."}},
		// Only "\n" ends the version line here, so a CR stays in it.
		{"CRLF", "\x00v1\r\n" + json, malformed("v1\r")},
		{"v0", "\x00v0\n" + json, malformed("v0")},
		{"future version", "0v99999\n" + json, unsupported(99999, 1)},
		{"bad JSON", "\x00v1\n{\"t\":{\"0\":5}", wantErr{line: 2, kind: KindBadOffset,
			spark: `Expected e.g. {"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}, got {"t":{"0":5}`}},
		{"2.1.0 form, bad JSON", "2{", wantErr{line: 1, kind: KindBadOffset,
			spark: `Expected e.g. {"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}, got {`}},
		{"header then nothing", "\x00v1\n", wantErr{line: 2, kind: KindBadOffset,
			spark: `Expected e.g. {"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}, got `}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseKafkaInitialOffsets(file, []byte(c.in))
			checkErr(t, c.name, file, err, c.want)
		})
	}
	for _, bad := range []string{``, `[]`, `{"t":[0]}`, `{"t":{"x":1}}`, `{"t":{"0":1.5}}`, `{"t":{"0":"1"}}`,
		`{"t":{"99999999999":1}}`, `{"t":{"0":1}} x`} {
		_, err := ParseKafkaOffsets("offsets/1", bad)
		checkErr(t, bad, "offsets/1", err, wantErr{kind: KindBadOffset, spark: sparkKafkaExpected + bad})
	}
}

func TestOtherErrors(t *testing.T) {
	for _, c := range []struct {
		name, in string
		want     wantErr
	}{
		{"empty", "", wantErr{kind: KindEmpty}},
		{"newline only", "\n", wantErr{kind: KindEmpty}},
		{"truncated", `{"id":"ab`, wantErr{kind: KindBadJSON}},
		{"no id", `{"name":"x"}`, wantErr{kind: KindBadJSON,
			spark: "No usable value for id\nDid not find value which can be converted into java.lang.String"}},
		{"id not a string", `{"id":1}`, wantErr{kind: KindBadJSON}},
	} {
		_, err := ParseStreamMetadata("metadata", []byte(c.in))
		checkErr(t, "metadata "+c.name, "metadata", err, c.want)
	}

	const op = "state/0/_metadata/metadata"
	v1 := `{"operatorInfo":{"operatorId":0,"operatorName":"dedupe"},"stateStoreInfo":[{"storeName":"default","numColsPrefixKey":0,"numPartitions":5}]}`
	for _, c := range []struct {
		name, in string
		want     wantErr
	}{
		{"empty", "", wantErr{line: 1, kind: KindEmpty}},
		{"v0", "v0\n" + v1, malformed("v0")},
		{"v3", "v3\n" + v1, unsupported(3, 2)},
		{"header only", "v1\n", wantErr{line: 2, kind: KindMissingMetadata}},
		{"truncated", "v1\n" + v1[:30], wantErr{line: 2, kind: KindBadJSON}},
		{"v2 without properties", "v2\n" + v1, wantErr{line: 2, kind: KindBadJSON}},
		{"store without partitions", "v1\n" + strings.Replace(v1, `,"numPartitions":5`, "", 1),
			wantErr{line: 2, kind: KindBadJSON}},
	} {
		_, err := ParseOperatorMetadata(op, []byte(c.in))
		checkErr(t, "operator "+c.name, op, err, c.want)
	}
	m, err := ParseOperatorMetadata(op, []byte("v2\n{\"operatorInfo\":{\"operatorId\":3,\"operatorName\":\"transformWithStateExec\"},"+
		"\"stateStoreInfo\":[{\"storeName\":\"default\",\"numColsPrefixKey\":0,\"numPartitions\":5,\"stateSchemaFilePath\":\"/s/0\"}],"+
		"\"operatorPropertiesJson\":\"{\\\"timeMode\\\":\\\"NoTime\\\"}\"}"))
	if err != nil || m.Version != 2 || m.OperatorID != 3 || m.Stores[0].SchemaFilePath != "/s/0" ||
		m.OperatorPropertiesJSON != `{"timeMode":"NoTime"}` {
		t.Fatalf("operator v2: %v %+v", err, m)
	}
	raw := m.Marshal()
	m.Raw = nil
	if !bytes.Equal(m.Marshal(), raw) {
		t.Errorf("operator v2 typed Marshal:\n%s\n%s", m.Marshal(), raw)
	}

	for _, bad := range []string{"", "x", `{"logOffset":"1"}`, `{"other":1}`, " 5"} {
		_, err := ParseFileSourceOffset("offsets/2", bad)
		checkErr(t, "file source offset "+bad, "offsets/2", err, wantErr{kind: KindBadOffset})
	}
	for _, c := range []struct {
		in   string
		want int64
	}{{"7", 7}, {`{"logOffset":7}`, 7}, {" {\"logOffset\":-1} ", -1}, {"+7", 7}} {
		if n, err := ParseFileSourceOffset("f", c.in); err != nil || n != c.want {
			t.Errorf("ParseFileSourceOffset(%q) = %d, %v", c.in, n, err)
		}
	}
	if FileSourceOffsetJSON(12) != `{"logOffset":12}` {
		t.Errorf("FileSourceOffsetJSON")
	}
	_, err = ParseLongOffset("offsets/2", "1.5")
	checkErr(t, "long offset", "offsets/2", err, wantErr{kind: KindBadOffset,
		spark: `java.lang.NumberFormatException: For input string: "1.5"`})
}

// The refusal comes before the split: lines of "\r" alone count as well.
func TestOffsetsMaxSourcesBeforeSplit(t *testing.T) {
	defer func(old int) { MaxSources = old }(MaxSources)
	MaxSources = 3
	for _, body := range []string{"-\n-\n-\n-\n-\n", "-\r-\r-\r-\r-\r", "-\r\n-\r\n-\r\n-\r\n"} {
		_, err := ParseOffsets("offsets/3", []byte("v1\n{}\n"+body))
		var le *Error
		if !errors.As(err, &le) || le.Kind != KindLineTooLong {
			t.Errorf("%q: err = %v", body, err)
		}
	}
}
