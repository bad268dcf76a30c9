package root

import "github.com/spf13/cobra"

// topics are the pages of `ckpt help <topic>` (gh's help topics): reference that belongs to no
// one command.
var topics = []struct{ name, short, long string }{
	{"environment", "Environment variables ckpt reads", `Environment variables ckpt reads. A flag on the command line always wins over the variable,
and the variable over the config file's context (ckpt help config).

Kafka (commands with --bootstrap-server):
  CKPT_BOOTSTRAP_SERVERS   --bootstrap-server host:port[,host:port…]
  CKPT_KAFKA_OPTION_FILE   --kafka-option-file (Java properties of Kafka client options)
  CKPT_BROKER_TIMEOUT      --broker-timeout (a Go duration, e.g. 45s)

Storage:
  AWS_ENDPOINT_URL         --s3-endpoint; the rest of the AWS configuration chain (AWS_REGION,
                           AWS_PROFILE, credentials) as the AWS CLI reads it
  CKPT_S3_PATH_STYLE       --s3-path-style (true)
  CKPT_S3_TIMEOUT          --s3-timeout
  CKPT_STORE_TIMEOUT       --store-timeout (default 30s)
  CKPT_WEBHDFS_ENDPOINT    --webhdfs-endpoint
  GOOGLE_APPLICATION_CREDENTIALS, STORAGE_EMULATOR_HOST   GCS
  AZURE_STORAGE_CONNECTION_STRING, AZURE_STORAGE_KEY      Azure

Limits (a file over them is refused, naming the file and the limit):
  CKPT_MAX_FILE_BYTES      --max-file-bytes: what one log file Spark reads whole may cost
                           (metadata, offsets, commits, source and sink log batch files; bytes,
                           default 67108864)
  CKPT_MAX_SOURCES         --max-sources: source lines in one offsets file (default 10000)

Configuration:
  CKPT_CONFIG              the config file (default $XDG_CONFIG_HOME/ckpt/config.yaml, else
                           ~/.config/ckpt/config.yaml)
  CKPT_CONTEXT             the context to use (--context wins; default: current-context)

Output:
  NO_COLOR                 no colour (https://no-color.org); CLICOLOR_FORCE: colour when piped
  COLUMNS                  the width tables and help fit in
  CKPT_PAGER, PAGER        the pager of long output (default less -FRX; empty or cat: none)
  CKPT_PROGRESS_DELAY      how long work runs before the status line appears (default 250ms)`},
	{"exit-codes", "What ckpt's exit codes mean", `Exit codes:
  0  success (doctor: nothing at or above --fail-on)
  1  ckpt failed: an I/O error, unreadable input, a refused repair
  2  usage error: an unknown flag, a bad value, a context that is not in the config file
  3  doctor found problems at or above --fail-on (default error); replay predicts a failed
     restart
  130  stopped by SIGINT or SIGTERM before it finished (a second signal ends ckpt at once).
     Every command observes the first within about a second: reads, writes and long loops
     stop; a repair, rewind, offsets reset or purge that had begun changing the checkpoint
     says so and names its journal (ckpt repair resume or undo); cp leaves a partial copy
     that cp --resume continues. run, lag --watch and broker stop on a signal by design
     and exit 0.

Each command's --help says what its codes mean for it.`},
	{"locations", "Where checkpoints live: paths and URIs ckpt reads", `A location is a path, a file:// URI, s3://bucket/prefix (s3a:// too), gs://bucket/prefix,
abfss://container@account.dfs.core.windows.net/path,
wasbs://container@account.blob.core.windows.net/path or hdfs://namenode:port/path (over WebHDFS at
--webhdfs-endpoint, default port 9870). Every command takes any of them.

A location that is not a checkpoint is never "no problems": a missing path, an empty or unrelated
directory, a folder of checkpoints (use --recursive) or <checkpoint>/offsets (the directory above
is suggested) is said as such, exit 1. Repairs keep their journals and backups under
<checkpoint>/_ckpt/repairs/ (ckpt repair list). See docs/locations.md and docs/storage.md.`},
}

// topicCommands are the help topics as cobra commands: no Run, so cobra lists them under
// "Additional help topics" and `ckpt help <topic>` prints them.
func topicCommands() []*cobra.Command {
	out := make([]*cobra.Command, 0, len(topics))
	for _, t := range topics {
		out = append(out, &cobra.Command{Use: t.name, Short: t.short, Long: t.long})
	}
	return out
}
