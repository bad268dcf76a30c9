package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/ckpt-dev/ckpt/internal/scenario"
	"github.com/ckpt-dev/ckpt/internal/storage"
	"github.com/ckpt-dev/ckpt/internal/storage/storetest"
)

// A test store kind for scripts: the environment .ci/<kind>.sh start exports, and how to make a
// fresh, empty root on it.
type scriptStore struct {
	env  []string // environment variables the scripts need; env[0] says whether one is configured
	hint string
	// root makes a fresh, empty root on the test server and returns a store on it (for
	// uploads) and the location the CLI opens with the script's environment.
	root func(ts *testscript.TestScript) (storage.Store, string)
}

var scriptStores = map[string]scriptStore{
	"gcs": {
		env:  []string{"CKPT_TEST_GCS_ENDPOINT"},
		hint: storetest.GCSHint,
		root: func(ts *testscript.TestScript) (storage.Store, string) {
			endpoint := ts.Getenv("CKPT_TEST_GCS_ENDPOINT")
			bucket := storetest.RandomName("ckpt-script-")
			ts.Check(storetest.CreateGCSBucket(context.Background(), endpoint, bucket))
			st := storage.NewGCSAt(endpoint, nil, bucket, "ckpt")
			return st, st.URI()
		},
	},
	// The location is ADLS Gen2's abfss:// on the connection string's account (Azurite's
	// devstoreaccount1), read and written on the connection string's blob endpoint.
	"azure": {
		env:  []string{"CKPT_TEST_AZURE_CONNECTION_STRING"},
		hint: storetest.AzureHint,
		root: func(ts *testscript.TestScript) (storage.Store, string) {
			cs := ts.Getenv("CKPT_TEST_AZURE_CONNECTION_STRING")
			name := storetest.RandomName("ckpt-script-")
			client, err := container.NewClientFromConnectionString(cs, name, nil)
			ts.Check(err)
			_, err = client.Create(context.Background(), nil)
			ts.Check(err)
			account := ""
			for _, part := range strings.Split(cs, ";") {
				if k, v, ok := strings.Cut(part, "="); ok && k == "AccountName" {
					account = v
				}
			}
			return storage.NewAzureFromClient(client, "ckpt"), "abfss://" + name + "@" + account + ".dfs.core.windows.net/ckpt"
		},
	},
	// The location is hdfs://127.0.0.1:<RPC port>/…, which ckpt reaches over WebHDFS at
	// CKPT_WEBHDFS_ENDPOINT (the script sets it from CKPT_TEST_WEBHDFS_ENDPOINT).
	"hdfs": {
		env:  []string{"CKPT_TEST_WEBHDFS_ENDPOINT", "CKPT_TEST_HDFS_NAMENODE"},
		hint: storetest.HDFSHint,
		root: func(ts *testscript.TestScript) (storage.Store, string) {
			dir := "/" + storetest.RandomName("ckpt-script-") + "/ckpt"
			st, err := storage.NewHDFS(ts.Getenv("CKPT_TEST_WEBHDFS_ENDPOINT"), dir, storage.Options{})
			ts.Check(err)
			return st, ts.Getenv("CKPT_TEST_HDFS_NAMENODE") + dir
		},
	},
}

// Script commands for the object stores other than S3 (testdata/script/store_*.txtar):
//
//	storeprobe KIND                 put ckpt-KIND-ok on PATH when KIND's test server is configured
//	                                (fails in CI when it is not), for [!exec:ckpt-KIND-ok] skip
//	mkstorescenario KIND NAME VAR   build scenario NAME into a fresh root on KIND's server; VAR=its URI
//	cmpsubst FILE1 FILE2 OLD NEW    compare FILE1, with every OLD replaced by NEW, with FILE2
func init() {
	scriptSetup = append(scriptSetup, func(env *testscript.Env) error {
		for _, st := range scriptStores {
			for _, k := range st.env {
				env.Setenv(k, os.Getenv(k))
			}
		}
		return nil
	})
	scriptCmds["storeprobe"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 1 {
			ts.Fatalf("usage: storeprobe KIND")
		}
		st, ok := scriptStores[args[0]]
		if !ok {
			ts.Fatalf("storeprobe: no store kind %q", args[0])
		}
		if ts.Getenv(st.env[0]) == "" {
			if ts.Getenv("CI") != "" {
				ts.Fatalf("CI must not skip %s tests: %s", args[0], st.hint)
			}
			return
		}
		dir := ts.MkAbs(".storebin")
		ts.Check(os.MkdirAll(dir, 0o755))
		ts.Check(os.WriteFile(filepath.Join(dir, "ckpt-"+args[0]+"-ok"), []byte("#!/bin/sh\nexit 0\n"), 0o755))
		ts.Setenv("PATH", dir+string(filepath.ListSeparator)+ts.Getenv("PATH"))
	}
	scriptCmds["mkstorescenario"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 3 {
			ts.Fatalf("usage: mkstorescenario KIND NAME VAR")
		}
		st, ok := scriptStores[args[0]]
		if !ok {
			ts.Fatalf("mkstorescenario: no store kind %q", args[0])
		}
		sc, ok := scenario.Get(args[1])
		if !ok {
			ts.Fatalf("mkstorescenario: no scenario %q", args[1])
		}
		s, uri := st.root(ts)
		ts.Check(sc.WriteTo(context.Background(), s))
		ts.Setenv(args[2], uri)
	}
	scriptCmds["cmpsubst"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 4 {
			ts.Fatalf("usage: cmpsubst FILE1 FILE2 OLD NEW")
		}
		got := strings.ReplaceAll(ts.ReadFile(args[0]), args[2], args[3])
		if want := ts.ReadFile(args[1]); got != want {
			ts.Fatalf("%s (with %s as %s) differs from %s:\n%s\n--- want:\n%s", args[0], args[2], args[3], args[1], got, want)
		}
	}
}
