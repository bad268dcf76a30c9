package transform

// Normalize gives an evaluated value of a column of kind k one Go type (int32, int64,
// float64, string, []byte, bool, time.Time or nil), as the grouping columns get.
func Normalize(v any, k Kind) (any, error) { return normalize(v, k) }
