package recovery

import "testing"

// Jackson's texts for documents cut short, as Spark printed them (testdata/spark-oracle/3.5.7
// and 4.1.1, jackson-*), and the documents whose text ckpt does not claim to know.
func TestJacksonEOF(t *testing.T) {
	r35, r41 := mkRelease(3, 5), mkRelease(4, 1)
	const redacted = "[Source: REDACTED (`StreamReadFeature.INCLUDE_SOURCE_IN_LOCATION` disabled); line: 1, column: "
	for _, c := range []struct {
		rel      release
		doc      string
		reader   bool
		exc, msg string
		exact    bool
	}{
		{r35, `{"batchWatermarkMs":0,`, false, excJSONParse,
			"Unexpected end-of-input within/between Object entries\n at [Source: (String)\"{\"batchWatermarkMs\":0,\"; line: 1, column: 23]", true},
		{r35, `{"batchWatermarkMs":`, false, excJSONEOF,
			"Unexpected end-of-input within/between Object entries\n at [Source: (String)\"{\"batchWatermarkMs\":\"; line: 1, column: 21]", true},
		{r35, `{"nextBatchWatermarkMs":0`, false, excJSONEOF,
			"Unexpected end-of-input: expected close marker for Object (start marker at [Source: (String)\"{\"nextBatchWatermarkMs\":0\"; line: 1, column: 1])\n at [Source: (String)\"{\"nextBatchWatermarkMs\":0\"; line: 1, column: 26]", true},
		{r35, `{"id"`, true, excJSONEOF, "Unexpected end-of-input within/between Object entries\n at [Source: (InputStreamReader); line: 1, column: 6]", true},
		{r41, `{"id":"0a1b`, true, excJSONEOF, "Unexpected end-of-input: was expecting closing quote for a string value\n at " + redacted + "12]", true},
		{r41, `{"a":{"b":1}`, false, excJSONEOF, "Unexpected end-of-input: expected close marker for Object (start marker at " + redacted + "1])\n at " + redacted + "13]", true},
		// Arrays and escapes: texts no Spark run of the oracle printed.
		{r41, `{"a":[1,`, false, excJSONParse, "Unexpected end-of-input within/between Array entries\n at " + redacted + "9]", false},
		{r41, `{"a":"\`, false, excJSONEOF, "Unexpected end-of-input in character escape sequence\n at " + redacted + "8]", false},
		// 2.1 was never run: its Jackson is older.
		{mkRelease(2, 1), `{`, false, excJSONEOF, "Unexpected end-of-input: expected close marker for Object (start marker at [Source: (String)\"{\"; line: 1, column: 1])\n at [Source: (String)\"{\"; line: 1, column: 2]", false},
	} {
		f, ok := jacksonEOF(c.rel, c.doc, c.reader)
		if !ok || f.exception != c.exc || f.message != c.msg || f.exact != c.exact {
			t.Errorf("%s %q: got %v %s %q exact %v, want %s %q exact %v", c.rel, c.doc, ok, f.exception, f.message, f.exact, c.exc, c.msg, c.exact)
		}
	}
	// Not a document cut short, or cut where the text is not known.
	for _, doc := range []string{``, `  `, `{"a":1}`, `{"a":tru`, `{"a":-`, `{"a":1.`, `{"a":1e`, `{"a":01`, `{a`, `{"a":1,}`, "{\"a\":\r", "{\"a\":\"\x01"} {
		if f, ok := jacksonEOF(r35, doc, false); ok {
			t.Errorf("%q: got %s %q, want no text", doc, f.exception, f.message)
		}
	}
}
