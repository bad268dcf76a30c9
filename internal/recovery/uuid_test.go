package recovery

import "testing"

// TestJavaUUID follows java.util.UUID.fromString (JDK 17): lenient groups, strict dashes.
func TestJavaUUID(t *testing.T) {
	for _, c := range []struct {
		id, want string
	}{
		{"8a1d3c52-6b0e-4a3f-9c1d-2e4f6a8b0c1d", ""},
		{"1-2-3-4-5", ""},
		{"+1-2-3-4-5", ""},
		{"not-a-uuid", "Invalid UUID string: not-a-uuid"},
		{"8a1d3c526b0e4a3f9c1d2e4f6a8b0c1d", "Invalid UUID string: 8a1d3c526b0e4a3f9c1d2e4f6a8b0c1d"},
		{"8a1d3c52-6b0e-4a3f-9c1d-2e4f6a8b0c1d-00", "UUID string too large"},
		{"a-b-c-d-e-f", "Invalid UUID string: a-b-c-d-e-f"},
		{"zz-1-2-3-4", `Error at index 0 in: "zz"`},
		{"1--2-3-4", ""}, // placeholder, replaced below
	} {
		if c.id == "1--2-3-4" {
			f := javaUUIDError(c.id)
			if f == nil || f.exception != "java.lang.NumberFormatException" || f.message != "" {
				t.Errorf("%q: %+v, want NumberFormatException with an empty message", c.id, f)
			}
			continue
		}
		f := javaUUIDError(c.id)
		got := ""
		if f != nil {
			got = f.message
		}
		if got != c.want {
			t.Errorf("%q: %q, want %q", c.id, got, c.want)
		}
	}
}
