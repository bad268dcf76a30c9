package storage

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/smithy-go/logging"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// s3Tracer writes one line per S3 HTTP request (each attempt) to w: the operation, the method
// and URL, the status and the time it took (--verbose, --debug).
type s3Tracer struct {
	mu sync.Mutex
	w  io.Writer
}

func (t *s3Tracer) ID() string { return "ckptTrace" }

// HandleDeserialize sees each attempt's raw request and response (the step runs inside the
// retry loop, after signing).
func (t *s3Tracer) HandleDeserialize(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
	start := time.Now()
	out, md, err := next.HandleDeserialize(ctx, in)
	req, ok := in.Request.(*smithyhttp.Request)
	if !ok {
		return out, md, err
	}
	status := "no response"
	if resp, ok := out.RawResponse.(*smithyhttp.Response); ok && resp != nil {
		status = resp.Status
	} else if err != nil {
		status = "error: " + err.Error()
	}
	t.mu.Lock()
	fmt.Fprintf(t.w, "ckpt: s3 %s %s %s -> %s (%s)\n", middleware.GetOperationName(ctx), req.Method, req.URL.Redacted(), status, time.Since(start).Round(time.Millisecond))
	t.mu.Unlock()
	return out, md, err
}

// s3Logging returns the SDK's logger and log mode: nothing unless debug (the SDK would print
// its own warnings to stderr, out of ckpt's control), and with debug the retries and the
// response headers, on the trace writer.
func s3Logging(trace io.Writer, debug bool) (logging.Logger, aws.ClientLogMode) {
	if !debug || trace == nil {
		return logging.Nop{}, 0
	}
	return logging.LoggerFunc(func(c logging.Classification, format string, v ...any) {
		fmt.Fprintf(trace, "ckpt: aws-sdk %s: %s\n", c, fmt.Sprintf(format, v...))
	}), aws.LogRetries | aws.LogResponse
}

// addS3Trace puts the tracer on an S3 client's middleware stack.
func addS3Trace(trace io.Writer) func(*middleware.Stack) error {
	t := &s3Tracer{w: trace}
	return func(st *middleware.Stack) error {
		return st.Deserialize.Add(t, middleware.After)
	}
}
