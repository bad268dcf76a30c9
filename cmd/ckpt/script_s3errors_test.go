package main

import (
	"net/http"
	"net/http/httptest"

	"github.com/rogpeppe/go-internal/testscript"
)

// httpnotfound VAR starts a web server that is not S3 (404 to everything) for the rest of the
// script and sets $VAR to its URL.
func init() {
	scriptCmds["httpnotfound"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 1 {
			ts.Fatalf("usage: httpnotfound VAR")
		}
		srv := httptest.NewServer(http.NotFoundHandler())
		ts.Defer(srv.Close)
		ts.Setenv(args[0], srv.URL)
	}
}
