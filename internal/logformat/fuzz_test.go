package logformat

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strconv"
	"testing"
)

// seedFormat adds every conformance file of the given format to the corpus
// (fails if the directory is missing, like the conformance test).
func seedFormat(f *testing.F, format string) {
	f.Helper()
	n := 0
	for _, cf := range conformanceFiles(f) {
		if formatOf(cf.rel) == format {
			f.Add(cf.data)
			n++
		}
	}
	if n == 0 {
		f.Fatalf("no conformance file of format %s", format)
	}
}

func addStrings(f *testing.F, ss ...string) {
	for _, s := range ss {
		f.Add([]byte(s))
	}
}

// checkParseError asserts the error contract: a *Error naming the file, with
// a known kind, and a message that renders.
func checkParseError(t *testing.T, err error) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error is %T, not *Error: %v", err, err)
	}
	if e.File != "f" || e.Kind < KindEmpty || e.Kind > KindMalformed || e.Expected == "" || e.Got == "" || e.Line < 0 {
		t.Fatalf("malformed *Error: %#v", e)
	}
	if e.Kind == KindUnsupportedVersion && e.Version <= e.MaxVersion {
		t.Fatalf("unsupported version %d <= max %d", e.Version, e.MaxVersion)
	}
	_ = e.Error()
}

// stable checks the writer: parse(Marshal(v)) equals v (after zeroing what
// Marshal normalises by design) and Marshal is idempotent.
func stable[T any](t *testing.T, v T, marshal func(T) []byte, parse func([]byte) (T, error), norm func(T) T) {
	t.Helper()
	out := marshal(v)
	v2, err := parse(out)
	if err != nil {
		t.Fatalf("re-parse of Marshal output %q failed: %v", out, err)
	}
	if a, b := norm(v), norm(v2); !reflect.DeepEqual(a, b) {
		t.Fatalf("value changed across Marshal/parse:\n%#v\n%#v\nbytes %q", a, b, out)
	}
	if out2 := marshal(v2); !bytes.Equal(out, out2) {
		t.Fatalf("Marshal not idempotent:\n%q\n%q", out, out2)
	}
}

func FuzzParseOffsets(f *testing.F) {
	seedFormat(f, "offsets")
	addStrings(f, "", "v1", "v1\n", "v1\n\n", "v0\n{}", "v+1\n{}\n1", "v99\n{}", "v1 \n{}",
		"v1\n{\"batchWatermarkMs\":0,\"batchT", "v1\n"+meta+"\n2\n\n", "v1\r\n"+meta+"\r\n2", "v1\n \n-",
		"v2\n{}\n0:1\n1:-", "v2\n\n0:", "v1\n{\"conf\":{\"a\\u0000\":\"\\ud800\"},\"x\":[1, 2]}\n-\n\n",
		"v1\n{\"batchWatermarkMs\":1,\"batchWatermarkMs\":2,\"conf\":{}}", "v1\r\r\n\n")
	f.Fuzz(func(t *testing.T, data []byte) {
		o, err := ParseOffsets("f", data)
		checkWithoutConf(t, data, o, err)
		if err != nil {
			checkParseError(t, err)
			return
		}
		if o.Metadata == nil && len(o.Sources) == 0 && !o.TrailingNewline {
			// Spark quirk: OffsetSeq(no metadata, no sources) serialises to
			// "v1\n", which neither Spark nor we can read back.
			if got := string(o.Marshal()); got != "v"+strconv.Itoa(o.Version)+"\n" {
				t.Fatalf("Marshal = %q", got)
			}
			return
		}
		stable(t, o, (*OffsetSeq).Marshal,
			func(b []byte) (*OffsetSeq, error) { return ParseOffsets("f", b) },
			func(o *OffsetSeq) *OffsetSeq { c := *o; c.CRBreaks = 0; return &c })
	})
}

// checkWithoutConf asserts that ParseOffsetsWithoutConf accepts and rejects
// data exactly as ParseOffsets did (o, err) and differs only in the conf.
func checkWithoutConf(t *testing.T, data []byte, o *OffsetSeq, err error) {
	t.Helper()
	lite, lerr := ParseOffsetsWithoutConf("f", data)
	if !reflect.DeepEqual(err, lerr) {
		t.Fatalf("ParseOffsetsWithoutConf error %v, ParseOffsets %v", lerr, err)
	}
	if err != nil {
		return
	}
	want := *o
	if o.Metadata != nil {
		md := *o.Metadata
		md.Conf = nil
		want.Metadata = &md
	}
	if !reflect.DeepEqual(&want, lite) {
		t.Fatalf("ParseOffsetsWithoutConf = %+v, want %+v", lite, &want)
	}
}

func FuzzParseCommit(f *testing.F) {
	seedFormat(f, "commits")
	addStrings(f, "", "v1", "v1\n", "v1\n\n", "v1 \n{}", "v3\n{}", "v4\n{}", "v1\n{\"nextBatchWatermarkMs\":5",
		"v1\r\n{}\r\n", "v2\n{\"stateUniqueIds\":{\"0\":[[\"a\"]]}}\nx\n\ny", "v1\n {\"z\":null} ",
		"v1\n{\"nextBatchWatermarkMs\":-9223372036854775808}")
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseCommit("f", data)
		if err != nil {
			checkParseError(t, err)
			return
		}
		if _, err := c.StateIDs(); err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("StateIDs error %T", err)
			}
		}
		stable(t, c, (*Commit).Marshal,
			func(b []byte) (*Commit, error) { return ParseCommit("f", b) },
			func(c *Commit) *Commit { x := *c; x.CRBreaks = 0; return &x })
	})
}

func FuzzParseStreamMetadata(f *testing.F) {
	seedFormat(f, "stream-metadata")
	addStrings(f, "", "\n", `{"id":"x"}`+"\n", `{"id":1}`, `{"a":[],"id":"\u00e9"}`, ` {"id":"x"} `, `{"id":"x","id":"y"}`)
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseStreamMetadata("f", data)
		if err != nil {
			checkParseError(t, err)
			return
		}
		stable(t, m, (*StreamMetadata).Marshal,
			func(b []byte) (*StreamMetadata, error) { return ParseStreamMetadata("f", b) },
			func(m *StreamMetadata) *StreamMetadata { return m })
	})
}

func FuzzParseKafkaOffsets(f *testing.F) {
	seedFormat(f, "kafka-offsets")
	for _, cf := range conformanceFiles(f) {
		if formatOf(cf.rel) == "offsets" {
			if o, err := ParseOffsets("f", cf.data); err == nil {
				for _, s := range o.Sources {
					f.Add([]byte(s.JSON))
				}
			}
		}
	}
	addStrings(f, "", "{}", `{"t":{}}`, `{"t":{"+1":2,"-3":-4}}`, `{"t":{"0":1},"t":{"0":2}}`, `{"a\"b":{"01":9223372036854775807}}`)
	f.Fuzz(func(t *testing.T, data []byte) {
		k, err := ParseKafkaOffsets("f", string(data))
		if err != nil {
			checkParseError(t, err)
			return
		}
		stable(t, k, func(k KafkaOffsets) []byte { return []byte(k.JSON()) },
			func(b []byte) (KafkaOffsets, error) { return ParseKafkaOffsets("f", string(b)) },
			func(k KafkaOffsets) KafkaOffsets { return k })
		// Rebuilding from the map keeps every entry.
		m := k.Map()
		if got := NewKafkaOffsets(m).Map(); !reflect.DeepEqual(got, m) {
			t.Fatalf("NewKafkaOffsets lost entries")
		}
		if got := NewKafkaOffsetsScala213(m).Map(); !reflect.DeepEqual(got, m) {
			t.Fatalf("NewKafkaOffsetsScala213 lost entries")
		}
	})
}

func FuzzParseKafkaInitialOffsets(f *testing.F) {
	seedFormat(f, "kafka-initial")
	addStrings(f, "", "\x00", "\x00v1", "\x00v1\n{}", "\x00v1\r\n{}", "2{\"t\":{\"0\":1}}\n", "0v99999\n{}\n",
		"\x00v1\n{}\n\n", "vv1\n{}", "\x00v+1\n{}", "\x00v01\n{}")
	f.Fuzz(func(t *testing.T, data []byte) {
		k, err := ParseKafkaInitialOffsets("f", data)
		if err != nil {
			checkParseError(t, err)
			return
		}
		// Exact unless the version header was not Spark's ("v+1", "v01").
		canonicalHeader := k.Version == 0 || bytes.HasPrefix(data[1:], []byte("v"+strconv.Itoa(k.Version)+"\n"))
		if got := k.Marshal(); canonicalHeader != bytes.Equal(got, data) {
			t.Fatalf("Marshal exact=%v, header canonical=%v:\n%q\n%q", bytes.Equal(got, data), canonicalHeader, got, data)
		}
		stable(t, k, (*KafkaInitialOffsets).Marshal,
			func(b []byte) (*KafkaInitialOffsets, error) { return ParseKafkaInitialOffsets("f", b) },
			func(k *KafkaInitialOffsets) *KafkaInitialOffsets { return k })
		// Without the raw JSON, Marshal writes Offsets.
		c := *k
		c.JSON = ""
		back, err := ParseKafkaInitialOffsets("f", c.Marshal())
		if err != nil || !reflect.DeepEqual(back.Offsets, k.Offsets) {
			t.Fatalf("Marshal from Offsets: %v", err)
		}
	})
}

// readAllSink drains a SinkLogReader into a SinkLog.
func readAllSink(data []byte) (*SinkLog, error) {
	r, err := NewSinkLogReader("f", iotestOneByte(data))
	if err != nil {
		return nil, err
	}
	l := &SinkLog{Version: r.Version(), Entries: []SinkFileStatus{}}
	for {
		e, err := r.Next()
		if err == io.EOF {
			l.TrailingNewline, l.CRBreaks = r.TrailingNewline(), r.CRBreaks()
			return l, nil
		}
		if err != nil {
			return nil, err
		}
		l.Entries = append(l.Entries, e)
	}
}

// iotestOneByte returns a reader that hands out data in small odd-sized
// chunks, to exercise the streaming reader's buffer boundaries.
func iotestOneByte(data []byte) io.Reader { return &chunkReader{data: data} }

type chunkReader struct {
	data []byte
	n    int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	c.n++
	size := 1 + c.n%7
	if size > len(p) {
		size = len(p)
	}
	if size > len(c.data) {
		size = len(c.data)
	}
	copy(p, c.data[:size])
	c.data = c.data[size:]
	return size, nil
}

func FuzzSinkLog(f *testing.F) {
	seedFormat(f, "sink-log")
	addStrings(f, "", "v1", "v1\n", "v2", "v1\n\n", "v1\r", "v1\r\n{}", "v1\n{\"path\":\"p\"}",
		"v1\r\n{\"path\":\"\\u00e9\",\"size\":1,\"isDir\":true,\"modificationTime\":2,\"blockReplication\":3,\"blockSize\":4,\"action\":\"x\",\"extra\":[]}\r")
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := ParseSinkLog("f", data)
		l2, err2 := readAllSink(data)
		if (err == nil) != (err2 == nil) {
			t.Fatalf("ParseSinkLog and SinkLogReader disagree: %v / %v", err, err2)
		}
		if err != nil {
			checkParseError(t, err)
			var e1, e2 *Error
			errors.As(err, &e1)
			errors.As(err2, &e2)
			if e1.Kind != e2.Kind || e1.Line != e2.Line {
				t.Fatalf("different errors: %v / %v", e1, e2)
			}
			return
		}
		if !reflect.DeepEqual(l, l2) {
			t.Fatalf("ParseSinkLog and SinkLogReader disagree:\n%#v\n%#v", l, l2)
		}
		stable(t, l, (*SinkLog).Marshal,
			func(b []byte) (*SinkLog, error) { return ParseSinkLog("f", b) },
			func(l *SinkLog) *SinkLog { c := *l; c.CRBreaks = 0; return &c })
	})
}

func FuzzFileSourceLog(f *testing.F) {
	seedFormat(f, "file-source-log")
	addStrings(f, "", "v1", "v1\n\n", "v1\r\n{\"path\":\"a\",\"timestamp\":1,\"batchId\":2}\r\n", "v1\n{\"path\":1}")
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := ParseFileSourceLog("f", data)
		var l2 *FileSourceLog
		r, err2 := NewFileSourceLogReader("f", iotestOneByte(data))
		if err2 == nil {
			l2 = &FileSourceLog{Version: r.Version(), Entries: []FileEntry{}}
			for {
				e, err := r.Next()
				if err == io.EOF {
					l2.TrailingNewline, l2.CRBreaks = r.TrailingNewline(), r.CRBreaks()
					break
				}
				if err != nil {
					err2 = err
					break
				}
				l2.Entries = append(l2.Entries, e)
			}
		}
		if (err == nil) != (err2 == nil) {
			t.Fatalf("ParseFileSourceLog and the reader disagree: %v / %v", err, err2)
		}
		if err != nil {
			checkParseError(t, err)
			var e1, e2 *Error
			errors.As(err, &e1)
			errors.As(err2, &e2)
			if e1.Kind != e2.Kind || e1.Line != e2.Line {
				t.Fatalf("different errors: %v / %v", e1, e2)
			}
			return
		}
		if !reflect.DeepEqual(l, l2) {
			t.Fatalf("ParseFileSourceLog and the reader disagree:\n%#v\n%#v", l, l2)
		}
		stable(t, l, (*FileSourceLog).Marshal,
			func(b []byte) (*FileSourceLog, error) { return ParseFileSourceLog("f", b) },
			func(l *FileSourceLog) *FileSourceLog { c := *l; c.CRBreaks = 0; return &c })
	})
}

func FuzzOperatorMetadata(f *testing.F) {
	seedFormat(f, "operator")
	addStrings(f, "", "v1", "v1\n", "v3\n{}", "v1\r\n{\"operatorInfo\":{\"operatorId\":1,\"operatorName\":\"x\"},\"stateStoreInfo\":[]}\n",
		"v2\n{\"operatorInfo\":{\"operatorId\":1,\"operatorName\":\"x\"},\"stateStoreInfo\":[{\"storeName\":\"s\",\"numColsPrefixKey\":0,\"numPartitions\":1,\"stateSchemaFilePath\":\"p\"}],\"operatorPropertiesJson\":\"{}\"}")
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseOperatorMetadata("f", data)
		if err != nil {
			checkParseError(t, err)
			return
		}
		stable(t, m, (*OperatorMetadata).Marshal,
			func(b []byte) (*OperatorMetadata, error) { return ParseOperatorMetadata("f", b) },
			func(m *OperatorMetadata) *OperatorMetadata { return m })
		// The typed writer must produce a file with the same typed content.
		typed := *m
		typed.Raw = nil
		back, err := ParseOperatorMetadata("f", typed.Marshal())
		if err != nil {
			t.Fatalf("typed Marshal unreadable: %v\n%q", err, typed.Marshal())
		}
		back.Raw, typed.Raw = nil, nil
		if !reflect.DeepEqual(back, &typed) {
			t.Fatalf("typed Marshal changed the value:\n%#v\n%#v", back, &typed)
		}
	})
}

func FuzzParseName(f *testing.F) {
	for _, s := range []string{"5", "+5", "-1", "9.compact", ".5.crc", ".9.compact.crc", ".metadata.crc",
		".5.3f0c6c5e-1a2b-4c3d-8e9f-0123456789ab.tmp", ".5.3f0c6c5e-1a2b-4c3d-8e9f-0123456789ab.TID12.tmp",
		".3f0c6c5e-1a2b-4c3d-8e9f-0123456789ab.tmp", "٣", "metadata", "", "9223372036854775808"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		n := ParseName(name)
		switch n.Kind {
		case NameBatch, NameCompact:
			if !n.HasBatch || n.Target != "" {
				t.Fatalf("%q: %+v", name, n)
			}
			canon := strconv.FormatInt(n.Batch, 10)
			if n.Kind == NameCompact {
				canon += CompactFileSuffix
			}
			if back := ParseName(canon); back.Kind != n.Kind || back.Batch != n.Batch {
				t.Fatalf("%q: canonical %q parses as %+v", name, canon, back)
			}
		case NameTemp, NameChecksum:
			if n.HasBatch {
				if b, ok := batchOf(n.Target); !ok || b != n.Batch {
					t.Fatalf("%q: %+v", name, n)
				}
			}
		case NameOther:
			if n.HasBatch || n.Target != "" {
				t.Fatalf("%q: %+v", name, n)
			}
		default:
			t.Fatalf("%q: kind %v", name, n.Kind)
		}
	})
}
