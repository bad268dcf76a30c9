package checkpoint

// WithoutRoot is l without the root listing Detect keeps for LoadAt, for comparisons.
func WithoutRoot(l Location) Location {
	l.root = nil
	return l
}
