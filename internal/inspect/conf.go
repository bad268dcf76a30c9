package inspect

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// ConfEntry is one key of an offsets file's conf map.
type ConfEntry struct {
	Key   string
	Value string
}

// Conf is the conf map of an offsets file in the file's key order. Spark writes it in Scala
// hash-map order, which differs between Spark versions; keeping that order lets a reader compare
// the output with the file. It marshals as a JSON object, not as a list.
type Conf []ConfEntry

// Get returns the value of key and whether it is set.
func (c Conf) Get(key string) (string, bool) {
	for _, e := range c {
		if e.Key == key {
			return e.Value, true
		}
	}
	return "", false
}

// MarshalJSON writes the entries as one object, in order.
func (c Conf) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, e := range c {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := marshalNoEscape(e.Key)
		if err != nil {
			return nil, err
		}
		v, err := marshalNoEscape(e.Value)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON reads an object of strings keeping its key order, so that tools built on the
// JSON output can round-trip it.
func (c *Conf) UnmarshalJSON(data []byte) error {
	if string(bytes.TrimSpace(data)) == "null" {
		*c = nil
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := t.(json.Delim); !ok || d != '{' {
		return fmt.Errorf("conf: want a JSON object, got %v", t)
	}
	out := Conf{}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return err
		}
		var v string
		if err := dec.Decode(&v); err != nil {
			return fmt.Errorf("conf %q: %w", kt, err)
		}
		out = append(out, ConfEntry{Key: kt.(string), Value: v})
	}
	*c = out
	return nil
}

// marshalNoEscape is json.Marshal without HTML escaping, so that values such as class names or
// "<" read as they are in the file.
func marshalNoEscape(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// rawJSON embeds an offset line as a JSON value. Offsets are JSON in every source ckpt knows,
// but a line is whatever the source wrote: one that is not valid JSON is embedded as a string so
// the document stays valid. "-" (no offset yet) is null.
func rawJSON(line string, void bool) json.RawMessage {
	if void {
		return json.RawMessage("null")
	}
	b := []byte(line)
	if json.Valid(b) {
		var out bytes.Buffer
		if err := json.Compact(&out, b); err == nil {
			return out.Bytes()
		}
	}
	s, _ := marshalNoEscape(line)
	return s
}
