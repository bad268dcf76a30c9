// Package exitcode is the one place that decides ckpt's process exit status.
//
// Commands return errors; main asks Code for the status. Runbooks depend on these numbers, so they
// are a public contract (see the README and `ckpt --help`).
package exitcode

import (
	"context"
	"errors"
	"strings"
)

// The exit codes ckpt uses.
const (
	OK       = 0 // success
	Failure  = 1 // ckpt itself failed: I/O, unreadable input, a refused operation
	Usage    = 2 // the command line was wrong
	Findings = 3 // doctor found problems at or above --fail-on, or replay predicts a failed restart
)

// Error carries the exit code a command chose. Err may be nil when the command already printed
// everything the user needs (doctor's findings, replay's verdict).
type Error struct {
	Code int
	Err  error
}

func (e *Error) Error() string {
	if e.Err == nil {
		return ""
	}
	return e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// New wraps err with an exit code.
func New(code int, err error) error { return &Error{Code: code, Err: err} }

// UsageError marks err as a usage error (exit 2).
func UsageError(err error) error { return &Error{Code: Usage, Err: err} }

// Silent returns an error that sets the exit code without printing anything more.
func Silent(code int) error { return &Error{Code: code} }

// Code maps an error to the process exit status.
func Code(err error) int {
	if err == nil {
		return OK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	// A logic package's error about a value the user gave (deltastate.SpecError) says so
	// without knowing exit codes.
	var u interface{ UsageMistake() bool }
	if errors.As(err, &u) && u.UsageMistake() {
		return Usage
	}
	// cobra reports these as plain errors; they are usage mistakes all the same.
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "flag needs an argument", "invalid argument", "accepts ", "requires at least", "requires at most"} {
		if strings.HasPrefix(msg, p) {
			return Usage
		}
	}
	return Failure
}

// Message is the text to print for err, or "" when nothing should be printed.
func Message(err error) string {
	var e *Error
	if errors.As(err, &e) && e.Err == nil {
		return ""
	}
	if err == nil {
		return ""
	}
	return err.Error()
}

// Interrupted is the status of a command that SIGINT or SIGTERM stopped before it finished:
// 128 + SIGINT, as shells report a process the signal ended and as restic exits.
const Interrupted = 130

// Signal is the cause of a context that a signal cancelled (context.WithCancelCause).
type Signal struct {
	// Name is the signal as a user knows it: SIGINT, SIGTERM.
	Name string
}

func (s *Signal) Error() string { return "interrupted by " + s.Name }

// Stopped is the error of a command that returned err after sig cancelled its context: exit
// Interrupted, and a message that names the signal and what the command was doing, without the
// "context canceled" that every interrupted read and write adds.
func Stopped(sig *Signal, err error) error {
	msg := strings.ReplaceAll(Message(err), ": "+context.Canceled.Error(), "")
	first, rest, more := strings.Cut(msg, "\n")
	if first == "" || first == context.Canceled.Error() {
		first = "stopped before finishing"
	}
	msg = sig.Error() + ": " + first
	if more {
		msg += "\n" + rest
	}
	return &Error{Code: Interrupted, Err: &stopped{msg: msg, err: err}}
}

// stopped keeps the command's error in the chain (errors.As still finds a repair's journal).
type stopped struct {
	msg string
	err error
}

func (s *stopped) Error() string { return s.msg }
func (s *stopped) Unwrap() error { return s.err }
