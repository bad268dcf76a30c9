// Package storetest holds the storage conformance suite (RunStoreTests) and
// helpers that give other packages' tests a real S3 store (S3, S3Bucket,
// S3Env). It imports "testing" and is meant for _test.go files only.
package storetest
