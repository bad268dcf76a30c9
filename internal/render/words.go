package render

import "strconv"

// Count writes n and the noun, plural unless n is 1: "1 Kafka record", "3 Kafka records". The
// noun is given in the singular; its plural adds "s" (ckpt's nouns are regular).
func Count(n int64, noun string) string {
	s := strconv.FormatInt(n, 10) + " " + noun
	if n != 1 {
		s += "s"
	}
	return s
}

// CountAs is Count for a noun whose plural is not regular: CountAs(3, "entry", "entries").
func CountAs(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.FormatInt(n, 10) + " " + many
}
