package main

import (
	"net"

	"github.com/rogpeppe/go-internal/testscript"
)

// silentserver VAR   listen on 127.0.0.1, accept connections and never answer; VAR=host:port
func init() {
	scriptCmds["silentserver"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 1 {
			ts.Fatalf("usage: silentserver VAR")
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		ts.Check(err)
		conns := make(chan net.Conn, 64)
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				select {
				case conns <- c: // held open, never read or written
				default:
					c.Close()
				}
			}
		}()
		ts.Defer(func() {
			ln.Close()
			for {
				select {
				case c := <-conns:
					c.Close()
				default:
					return
				}
			}
		})
		ts.Setenv(args[0], ln.Addr().String())
	}
}
