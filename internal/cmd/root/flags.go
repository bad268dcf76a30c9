package root

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ckpt-dev/ckpt/internal/cli"
	"github.com/ckpt-dev/ckpt/internal/kafka"
	"github.com/ckpt-dev/ckpt/internal/logformat"
)

// globals are the flags every command has: how much ckpt says on stderr.
type globals struct {
	verbose, debug, quiet bool
	// context is --context: the config file's context to take defaults from.
	context string
	// maxFileBytes and maxSources raise logformat's limits for this run (0: the environment's
	// or the default).
	maxFileBytes int64
	maxSources   int
}

func (g *globals) add(fs *pflag.FlagSet) {
	fs.BoolVarP(&g.verbose, "verbose", "v", false, "log every S3 and Kafka request ckpt makes, one line each, to stderr")
	fs.BoolVar(&g.debug, "debug", false, "--verbose, plus the AWS SDK's retries and response headers and the Kafka client's debug log")
	fs.BoolVarP(&g.quiet, "quiet", "q", false, "print only results and errors: no progress, warnings or hints on stderr")
	fs.StringVar(&g.context, "context", "", "the config file's `context` to take defaults from (default: CKPT_CONTEXT, else current-context; see ckpt help config)")
	fs.Int64Var(&g.maxFileBytes, "max-file-bytes", 0, "the most one log file read whole may cost, in `bytes` (default: CKPT_MAX_FILE_BYTES, else 67108864; ckpt help environment)")
	fs.IntVar(&g.maxSources, "max-sources", 0, "the most source lines one offsets file may hold (default: CKPT_MAX_SOURCES, else 10000)")
}

// limits applies --max-file-bytes and --max-sources before any read, as root.Main applies their
// environment variables.
func (g *globals) limits(fs *pflag.FlagSet) error {
	if f := fs.Lookup("max-file-bytes"); f != nil && f.Changed {
		if g.maxFileBytes <= 0 {
			return fmt.Errorf("--max-file-bytes %d: want a positive number of bytes", g.maxFileBytes)
		}
		logformat.MaxFileBytes = g.maxFileBytes
	}
	if f := fs.Lookup("max-sources"); f != nil && f.Changed {
		if g.maxSources <= 0 {
			return fmt.Errorf("--max-sources %d: want a positive number of source lines", g.maxSources)
		}
		logformat.MaxSources = g.maxSources
	}
	return nil
}

// apply sets up the environment before a command runs. errOut is the real stderr: the final
// error still goes there with --quiet (root.Execute prints it).
func (g *globals) apply(env *cli.Env, errOut io.Writer) {
	trace := g.verbose || g.debug
	// The trace is written while a status line may be on screen: the guard erases it first.
	errOut = env.IO.Guard(errOut)
	if g.quiet {
		env.IO.ErrOut = io.Discard
	}
	if trace {
		env.Storage.Trace, env.Storage.Debug = errOut, g.debug
		kafka.SetTrace(errOut, g.debug)
	} else {
		kafka.SetTrace(nil, false)
	}
}

// storageCommands are the commands that read or write checkpoint storage: only they take the S3
// flags (version, broker and completion do not).
var storageCommands = map[string]bool{
	"inspect": true, "doctor": true, "replay": true, "lag": true, "repair": true,
	"offsets": true, "rewind": true, "state": true, "run": true, "sink": true, "cp": true, "purge": true,
}

// addStorageFlags puts the S3 flags on cmd and its subcommands.
func addStorageFlags(cmd *cobra.Command, env *cli.Env) {
	pf := cmd.PersistentFlags()
	pf.BoolVar(&env.Storage.S3PathStyle, "s3-path-style", env.Storage.S3PathStyle, "use path-style S3 addressing (for S3-compatible stores; also CKPT_S3_PATH_STYLE=true)")
	pf.StringVar(&env.Storage.S3Endpoint, "s3-endpoint", env.Storage.S3Endpoint, "S3 endpoint URL (default: AWS_ENDPOINT_URL or AWS)")
	pf.StringVar(&env.Storage.S3Region, "s3-region", env.Storage.S3Region, "S3 region (default: the AWS config chain, then us-east-1)")
	pf.DurationVar(&env.Storage.S3Timeout, "s3-timeout", env.Storage.S3Timeout, "how long one S3 call waits for the endpoint to answer, all attempts included, and for each part of a body (default CKPT_S3_TIMEOUT, else --store-timeout: 30s)")
	pf.StringVar(&env.Storage.WebHDFSEndpoint, "webhdfs-endpoint", env.Storage.WebHDFSEndpoint, "WebHDFS endpoint for hdfs:// locations (default: CKPT_WEBHDFS_ENDPOINT, else http://<namenode host>:9870)")
	pf.DurationVar(&env.Storage.Timeout, "store-timeout", env.Storage.Timeout, "how long one call to GCS, Azure, HDFS (and S3) waits for the endpoint to answer, all attempts included, and for each part of a body (default CKPT_STORE_TIMEOUT, else 30s)")
}
