package storage

import "context"

// DeferredSyncer is implemented by stores on which making a new or removed
// name survive a power loss is a step of its own (Local: an fsync of the
// directory, on top of the fsync of the file's content). Its methods let a
// caller whose protocol tolerates losing the newest such change skip that
// step (docs/design.md, "Durability of local writes").
//
// The rule that keeps the changes in order: every WriteFile and Delete makes
// the deferred changes made before it durable before its own change can be,
// and so does every WriteFileDeferred for those in other directories; so
// after a power loss what survives is everything up to the last durable
// change plus some of the deferred changes after it, and a deferred name
// never survives without the deferred names of other directories before it.
type DeferredSyncer interface {
	// WriteFileDeferred is WriteFile (atomic, create-only, the content
	// durable before the name appears) except that the new name may be lost
	// by a power loss until the next WriteFile, Delete or SyncDeferred on the
	// store, or WriteFileDeferred in another directory, returns.
	WriteFileDeferred(ctx context.Context, path string, data []byte) error
	// DeleteDeferred is Delete except that the file may reappear after a
	// power loss until the next WriteFile, Delete or SyncDeferred returns.
	DeleteDeferred(ctx context.Context, path string) error
	// SyncDeferred makes every deferred change made before it durable.
	SyncDeferred(ctx context.Context) error
}

// WriteFileDeferred is s's WriteFileDeferred, or WriteFile when s has none
// (there, every write is as durable as the store makes it).
func WriteFileDeferred(ctx context.Context, s Store, path string, data []byte) error {
	if d, ok := s.(DeferredSyncer); ok {
		return d.WriteFileDeferred(ctx, path, data)
	}
	return s.WriteFile(ctx, path, data)
}

// DeleteDeferred is s's DeleteDeferred, or Delete when s has none.
func DeleteDeferred(ctx context.Context, s Store, path string) error {
	if d, ok := s.(DeferredSyncer); ok {
		return d.DeleteDeferred(ctx, path)
	}
	return s.Delete(ctx, path)
}

// SyncDeferred is s's SyncDeferred; nil when s defers nothing.
func SyncDeferred(ctx context.Context, s Store) error {
	if d, ok := s.(DeferredSyncer); ok {
		return d.SyncDeferred(ctx)
	}
	return nil
}
