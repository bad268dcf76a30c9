package position

import "testing"

// FuzzParseOffsetsFile: any input gives offsets of 0 or more, or an error; never a panic.
func FuzzParseOffsetsFile(f *testing.F) {
	for _, s := range []string{"topic,partition,offset\nevents,1,4\n", `{"events":{"1":4}}`, "a,b,c", "x,1,2,3\n#c\n", `{"t":{"0":-2}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseOffsetsFile("f", data)
		if err != nil {
			return
		}
		for tp, o := range m {
			if o < 0 || tp.Partition < 0 {
				t.Fatalf("%q: %v at %d", data, tp, o)
			}
		}
	})
}

// FuzzParseSelector: a parsed selector has a topic and partitions of 0 or more.
func FuzzParseSelector(f *testing.F) {
	for _, s := range []string{"orders", "orders:0,2", ":1", "a:b", "t:-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sel, err := ParseSelector(s)
		if err != nil {
			return
		}
		if sel.Topic == "" {
			t.Fatalf("%q: empty topic", s)
		}
		for _, p := range sel.Partitions {
			if p < 0 {
				t.Fatalf("%q: partition %d", s, p)
			}
		}
	})
}
