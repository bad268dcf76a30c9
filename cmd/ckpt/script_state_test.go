package main

import (
	"path/filepath"

	"github.com/rogpeppe/go-internal/testscript"
)

// SPARK_STATE points scripts at the state store fixtures real Spark wrote
// (testdata/spark-state); ckpt state only reads them.
func init() {
	scriptSetup = append(scriptSetup, func(env *testscript.Env) error {
		dir, err := filepath.Abs(filepath.Join("..", "..", "testdata", "spark-state"))
		if err != nil {
			return err
		}
		env.Setenv("SPARK_STATE", dir)
		return nil
	})
}
