package kafka

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ckpt-dev/ckpt/internal/kafka/dataloss"
	"github.com/ckpt-dev/ckpt/internal/logformat"
)

// Option defaults, as Spark 3.5 has them.
const (
	// DefaultMaxTriggerDelay is maxTriggerDelay's default ("15m").
	DefaultMaxTriggerDelay = 15 * time.Minute
	// DefaultFetchOffsetNumRetries is fetchOffset.numRetries' default.
	DefaultFetchOffsetNumRetries = 3
	// DefaultFetchOffsetRetryInterval is fetchOffset.retryIntervalMs' default.
	DefaultFetchOffsetRetryInterval = time.Second
	// DefaultPollTimeout is kafkaConsumer.pollTimeoutMs' default (spark.network.timeout, 120s).
	DefaultPollTimeout = 120 * time.Second
	// DefaultGroupIDPrefix is groupIdPrefix's default.
	DefaultGroupIDPrefix = "spark-kafka-source"
)

// StartingOffsetsKind is the form of the startingOffsets option.
type StartingOffsetsKind int

// The forms of startingOffsets.
const (
	// StartLatest starts at the end of every partition (the streaming default).
	StartLatest StartingOffsetsKind = iota
	// StartEarliest starts at the log start of every partition.
	StartEarliest
	// StartSpecific starts at the offsets of a JSON object; -2 means earliest, -1 latest.
	StartSpecific
)

// Special offsets in startingOffsets JSON (KafkaOffsetRangeLimit.EARLIEST/LATEST).
const (
	OffsetEarliest int64 = -2
	OffsetLatest   int64 = -1
)

// StartingOffsets is a parsed startingOffsets option.
type StartingOffsets struct {
	// Kind is latest, earliest or specific.
	Kind StartingOffsetsKind
	// Specific holds the JSON's offsets when Kind is StartSpecific.
	Specific map[logformat.TopicPartition]int64
}

// SourceOptions are the parsed options of a Kafka source, named and defaulted as Spark's
// DataStreamReader options (see ParseSourceOptions and docs/kafka.md).
type SourceOptions struct {
	// BootstrapServers is kafka.bootstrap.servers, split at commas. Required.
	BootstrapServers []string
	// Subscribe is the subscribe option: a fixed list of topics. Exactly one of Subscribe,
	// SubscribePattern and Assign is set.
	Subscribe []string
	// SubscribePattern is the subscribePattern option: topics whose name contains a match of
	// this regular expression (Spark uses Scala's findFirstIn, so it is not anchored).
	SubscribePattern *regexp.Regexp
	// Assign is the assign option: fixed partitions, from JSON like {"topicA":[0,1]}.
	Assign []logformat.TopicPartition
	// StartingOffsets is where a new query starts. Default: latest.
	StartingOffsets StartingOffsets
	// MaxOffsetsPerTrigger caps the records of one batch, split over partitions in proportion
	// to their backlog. Default (0): no cap.
	MaxOffsetsPerTrigger int64
	// MinOffsetsPerTrigger delays a batch until this many records are available or
	// MaxTriggerDelay has passed since the last batch. Default (0): no minimum.
	MinOffsetsPerTrigger int64
	// MaxTriggerDelay bounds the delay of MinOffsetsPerTrigger. Default: 15m.
	MaxTriggerDelay time.Duration
	// FailOnDataLoss fails the query when data may have been lost; false only warns. Default: true.
	FailOnDataLoss bool
	// IncludeHeaders adds record headers to each Row. Default: false.
	IncludeHeaders bool
	// FetchOffsetNumRetries is how often offset listing is attempted. Default: 3.
	FetchOffsetNumRetries int
	// FetchOffsetRetryInterval is the pause between those attempts. Default: 1s.
	FetchOffsetRetryInterval time.Duration
	// PollTimeout is how long a read waits for a record it knows exists. Default: 120s.
	PollTimeout time.Duration
	// GroupIDPrefix prefixes the group id that data-loss messages name. Default: spark-kafka-source.
	GroupIDPrefix string
	// GroupID is kafka.group.id. ckpt never joins a consumer group (like Spark, it assigns
	// partitions itself), so the id only changes messages, as in Spark. Default: none.
	GroupID string
	// ReadCommitted is kafka.isolation.level=read_committed. Default: read_uncommitted.
	ReadCommitted bool
	// Kafka holds every kafka.* option with the prefix kept, for ClientOpts.
	Kafka map[string]string
	// Notes are non-fatal remarks about the options (an ignored kafka.group.id, for example).
	Notes []string

	// Warn, when set by the caller (it is not an option), receives the warnings Spark would log:
	// data loss with failOnDataLoss=false, records skipped while reading. Read calls it from its
	// task goroutines, so it must be safe for concurrent use. Default: discarded.
	Warn func(msg string)
	// CheckpointLocation, when set by the caller, makes the group id in messages follow Spark's
	// "<prefix>-<uuid>-<hashCode of the location>" form. Default: "" (hash of the empty string).
	CheckpointLocation string
}

// OptionError is an option that is unknown, missing, malformed or not accepted. It is returned
// before anything is written. Message is Spark's own text where Spark validates the option.
type OptionError struct {
	// Option is the option's name as written ("" when the problem spans options).
	Option string
	// Value is the rejected value, if any.
	Value string
	// Accepted lists the accepted values or options.
	Accepted []string
	// Message is the complete error text.
	Message string
}

func (e *OptionError) Error() string { return e.Message }

func optErr(option, value string, accepted []string, format string, args ...any) *OptionError {
	return &OptionError{Option: option, Value: value, Accepted: accepted, Message: fmt.Sprintf(format, args...)}
}

// sourceOptionNames are the accepted non-kafka.* source options, spelled as documented. Keys
// are matched case-insensitively, as Spark's CaseInsensitiveMap does.
var sourceOptionNames = []string{
	"subscribe", "subscribePattern", "assign", "startingOffsets",
	"maxOffsetsPerTrigger", "minOffsetsPerTrigger", "maxTriggerDelay",
	"failOnDataLoss", "includeHeaders",
	"fetchOffset.numRetries", "fetchOffset.retryIntervalMs", "kafkaConsumer.pollTimeoutMs",
	"groupIdPrefix",
}

// sparkOnlySourceOptions are Spark source options ckpt does not implement yet.
var sparkOnlySourceOptions = []string{
	"startingTimestamp", "startingOffsetsByTimestamp", "startingOffsetsByTimestampStrategy",
	"minPartitions", "maxRecordsPerPartition",
}

// ParseSourceOptions validates and parses the options of a Kafka source, in Spark's order and
// with Spark's messages where Spark has them, then rejects anything ckpt does not know.
func ParseSourceOptions(opts map[string]string) (*SourceOptions, error) {
	p := lowerKeys(opts)
	get := func(name string) (string, bool) {
		e, ok := p[strings.ToLower(name)]
		return e.value, ok
	}

	// validateStreamOptions.
	if _, ok := get("endingOffsets"); ok {
		return nil, optErr("endingOffsets", "", nil, "ending offset not valid in streaming queries")
	}
	if _, ok := get("endingOffsetsByTimestamp"); ok {
		return nil, optErr("endingOffsetsByTimestamp", "", nil, "ending timestamp not valid in streaming queries")
	}
	// validateGeneralOptions: exactly one strategy.
	strategies := []string{"subscribe", "subscribepattern", "assign"}
	var chosen []string
	for _, s := range strategies {
		if _, ok := p[s]; ok {
			chosen = append(chosen, s)
		}
	}
	if len(chosen) == 0 {
		return nil, optErr("", "", []string{"subscribe", "subscribePattern", "assign"},
			"One of the following options must be specified for Kafka source: subscribe, subscribepattern, assign. See the docs for more details.")
	}
	if len(chosen) > 1 {
		return nil, optErr("", "", []string{"subscribe", "subscribePattern", "assign"},
			"Only one of the following options can be specified for Kafka source: subscribe, subscribepattern, assign. See the docs for more details.")
	}
	o := &SourceOptions{
		MaxTriggerDelay:          DefaultMaxTriggerDelay,
		FailOnDataLoss:           true,
		FetchOffsetNumRetries:    DefaultFetchOffsetNumRetries,
		FetchOffsetRetryInterval: DefaultFetchOffsetRetryInterval,
		PollTimeout:              DefaultPollTimeout,
		GroupIDPrefix:            DefaultGroupIDPrefix,
		Kafka:                    map[string]string{},
	}
	switch s := chosen[0]; s {
	case "assign":
		v := p[s].value
		if !strings.HasPrefix(strings.TrimSpace(v), "{") {
			return nil, optErr(p[s].key, v, nil, "No topicpartitions to assign as specified value for option 'assign' is '%s'", v)
		}
		tps, err := parseAssign(v)
		if err != nil {
			return nil, err
		}
		o.Assign = tps
	case "subscribe":
		v := p[s].value
		for _, t := range strings.Split(v, ",") {
			if t = strings.TrimSpace(t); t != "" {
				o.Subscribe = append(o.Subscribe, t)
			}
		}
		if len(o.Subscribe) == 0 {
			return nil, optErr(p[s].key, v, nil, "No topics to subscribe to as specified value for option 'subscribe' is '%s'", v)
		}
	case "subscribepattern":
		v := p[s].value
		pat := strings.TrimSpace(v)
		if pat == "" {
			return nil, optErr(p[s].key, v, nil, "Pattern to subscribe is empty as specified value for option 'subscribePattern' is '%s'", v)
		}
		re, err := regexp.Compile(pat)
		if err != nil {
			return nil, optErr(p[s].key, v, nil, "invalid value for option 'subscribePattern': %v (ckpt uses Go's RE2 syntax, which covers Java regular expressions without lookaround and backreferences)", err)
		}
		o.SubscribePattern = re
	}
	for _, name := range sparkOnlySourceOptions {
		if e, ok := p[strings.ToLower(name)]; ok {
			return nil, optErr(e.key, e.value, nil, "option '%s' is supported by Spark but not by ckpt yet", e.key)
		}
	}
	// Kafka options Spark refuses, with Spark's texts.
	if err := refusedKafkaOption(p, true); err != nil {
		return nil, err
	}
	if g, ok := get("kafka.group.id"); ok {
		o.GroupID = g
		o.Notes = append(o.Notes, dataloss.CustomGroupID)
		if _, ok := get("groupIdPrefix"); ok {
			o.Notes = append(o.Notes, "Option groupIdPrefix will be ignored as option kafka.group.id has been set.")
		}
		o.Notes = append(o.Notes, "kafka.group.id is only used in messages: ckpt assigns partitions itself and never joins or commits to a consumer group")
	}
	if _, ok := get("kafka.bootstrap.servers"); !ok {
		return nil, optErr("kafka.bootstrap.servers", "", nil, "Option 'kafka.bootstrap.servers' must be specified for configuring Kafka consumer")
	}
	minE, hasMin := get("minOffsetsPerTrigger")
	maxE, hasMax := get("maxOffsetsPerTrigger")
	if hasMax {
		n, err := parsePositiveLong("maxOffsetsPerTrigger", maxE)
		if err != nil {
			return nil, err
		}
		o.MaxOffsetsPerTrigger = n
	}
	if hasMin {
		n, err := parsePositiveLong("minOffsetsPerTrigger", minE)
		if err != nil {
			return nil, err
		}
		o.MinOffsetsPerTrigger = n
	}
	if hasMin && hasMax && o.MinOffsetsPerTrigger > o.MaxOffsetsPerTrigger {
		return nil, optErr("minOffsetsPerTrigger", minE, nil,
			"The value of minOffsetPerTrigger(%d) is higher than the maxOffsetsPerTrigger(%d).", o.MinOffsetsPerTrigger, o.MaxOffsetsPerTrigger)
	}

	// Options read when the source is created.
	if e, ok := p["startingoffsets"]; ok {
		so, err := parseStartingOffsets(e.key, e.value)
		if err != nil {
			return nil, err
		}
		o.StartingOffsets = so
	}
	if v, ok := get("maxTriggerDelay"); ok {
		d, err := parseSparkDuration(v)
		if err != nil {
			return nil, optErr("maxTriggerDelay", v, []string{"<n>us", "<n>ms", "<n>s", "<n>m", "<n>min", "<n>h", "<n>d", "<n> (milliseconds)"}, "%s", err.Error())
		}
		o.MaxTriggerDelay = d
	}
	for _, b := range []struct {
		name string
		dst  *bool
	}{{"failOnDataLoss", &o.FailOnDataLoss}, {"includeHeaders", &o.IncludeHeaders}} {
		if v, ok := get(b.name); ok {
			x, err := parseScalaBool(b.name, v)
			if err != nil {
				return nil, err
			}
			*b.dst = x
		}
	}
	if v, ok := get("fetchOffset.numRetries"); ok {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 {
			return nil, optErr("fetchOffset.numRetries", v, []string{"a positive integer"}, "invalid value %q for option 'fetchOffset.numRetries': expected a positive integer (default %d)", v, DefaultFetchOffsetNumRetries)
		}
		o.FetchOffsetNumRetries = n
	}
	for _, m := range []struct {
		name string
		dst  *time.Duration
	}{{"fetchOffset.retryIntervalMs", &o.FetchOffsetRetryInterval}, {"kafkaConsumer.pollTimeoutMs", &o.PollTimeout}} {
		if v, ok := get(m.name); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil || n < 0 {
				return nil, optErr(m.name, v, []string{"milliseconds, a non-negative integer"}, "invalid value %q for option '%s': expected milliseconds as a non-negative integer", v, m.name)
			}
			*m.dst = time.Duration(n) * time.Millisecond
		}
	}
	if v, ok := get("groupIdPrefix"); ok {
		o.GroupIDPrefix = v
	}

	// Everything else: kafka.* through the client table, the rest must be a known option.
	for lk, e := range p {
		if strings.HasPrefix(lk, "kafka.") {
			o.Kafka[lk] = e.value
			continue
		}
		if !slices.ContainsFunc(sourceOptionNames, func(n string) bool { return strings.EqualFold(n, lk) }) {
			return nil, optErr(e.key, e.value, sourceOptionNames,
				"unknown Kafka source option '%s'; accepted options: %s, and kafka.* client options (see docs/kafka.md)", e.key, strings.Join(sourceOptionNames, ", "))
		}
	}
	cfg, err := parseClientConfig(o.Kafka)
	if err != nil {
		return nil, err
	}
	o.BootstrapServers = cfg.bootstrap
	o.ReadCommitted = cfg.readCommitted
	return o, nil
}

// DefaultReadLimit is Spark's getDefaultReadLimit: min and max together, only min, only max,
// or everything available.
func (o *SourceOptions) DefaultReadLimit() ReadLimit {
	if o.MinOffsetsPerTrigger == 0 && o.MaxOffsetsPerTrigger == 0 {
		return ReadLimit{AllAvailable: true}
	}
	rl := ReadLimit{MaxRows: o.MaxOffsetsPerTrigger}
	if o.MinOffsetsPerTrigger > 0 {
		rl.MinRows = o.MinOffsetsPerTrigger
		rl.MaxTriggerDelay = o.MaxTriggerDelay
	}
	return rl
}

type optEntry struct{ key, value string }

// lowerKeys indexes options by lower-cased name, keeping the spelling for messages. Should two
// spellings of one name both be present, the last in sorted order wins, deterministically.
func lowerKeys(opts map[string]string) map[string]optEntry {
	keys := make([]string, 0, len(opts))
	for k := range opts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	p := make(map[string]optEntry, len(opts))
	for _, k := range keys {
		p[strings.ToLower(k)] = optEntry{k, opts[k]}
	}
	return p
}

// parseAssign reads {"topicA":[0,1],"topicB":[2]} (JsonUtils.partitions).
func parseAssign(v string) ([]logformat.TopicPartition, error) {
	var m map[string][]int32
	if err := json.Unmarshal([]byte(v), &m); err != nil || m == nil {
		return nil, optErr("assign", v, nil, `Expected e.g. {"topicA":[0,1],"topicB":[0,1]}, got %s`, v)
	}
	var tps []logformat.TopicPartition
	seen := map[logformat.TopicPartition]bool{}
	for t, ps := range m {
		for _, part := range ps {
			tp := logformat.TopicPartition{Topic: t, Partition: part}
			if !seen[tp] {
				seen[tp] = true
				tps = append(tps, tp)
			}
		}
	}
	return sortedTPs(tps), nil
}

// parseStartingOffsets reads "earliest", "latest" (any case) or Spark's offsets JSON.
func parseStartingOffsets(key, v string) (StartingOffsets, error) {
	t := strings.TrimSpace(v)
	switch strings.ToLower(t) {
	case "latest":
		return StartingOffsets{Kind: StartLatest}, nil
	case "earliest":
		return StartingOffsets{Kind: StartEarliest}, nil
	}
	ko, err := logformat.ParseKafkaOffsets(key, t)
	if err != nil {
		return StartingOffsets{}, optErr(key, v, []string{"earliest", "latest", `{"topic":{"0":-2,"1":42}}`},
			`Expected e.g. {"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}, got %s`, t)
	}
	m := ko.Map()
	for tp, off := range m {
		if off < OffsetEarliest {
			return StartingOffsets{}, optErr(key, v, nil, "invalid offset %d for %s in option '%s': use an offset >= 0, -1 for latest or -2 for earliest", off, sparkTP(tp), key)
		}
	}
	return StartingOffsets{Kind: StartSpecific, Specific: m}, nil
}

func parsePositiveLong(name, v string) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		// Scala's toLong: java.lang.NumberFormatException: For input string: "x".
		return 0, optErr(name, v, []string{"a positive integer"}, "invalid value for option '%s': For input string: %q (expected a positive integer)", name, v)
	}
	if n <= 0 {
		return 0, optErr(name, v, []string{"a positive integer"}, "invalid value for option '%s': %d (expected a positive integer)", name, n)
	}
	return n, nil
}

// parseScalaBool is Scala's String.toBoolean: "true" or "false" in any case, nothing else.
func parseScalaBool(name, v string) (bool, error) {
	switch strings.ToLower(v) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, optErr(name, v, []string{"true", "false"}, "invalid value for option '%s': For input string: %q (accepted values: true, false)", name, v)
}

var sparkDurationRE = regexp.MustCompile(`^(-?[0-9]+)([a-z]+)?$`)

// parseSparkDuration is JavaUtils.timeStringAs(s, MILLISECONDS), as Utils.timeStringAsMs uses
// it: an integer with an optional unit us, ms, s, m, min, h or d; no unit means milliseconds.
func parseSparkDuration(s string) (time.Duration, error) {
	const timeError = "Time must be specified as seconds (s), milliseconds (ms), microseconds (us), minutes (m or min), hour (h), or day (d). E.g. 50s, 100ms, or 250us."
	lower := strings.TrimSpace(strings.ToLower(s))
	m := sparkDurationRE.FindStringSubmatch(lower)
	if m == nil {
		return 0, fmt.Errorf("%s\nFailed to parse time string: %s", timeError, s)
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s\nFor input string: %q", timeError, m[1])
	}
	units := map[string]time.Duration{"us": time.Microsecond, "ms": time.Millisecond, "s": time.Second, "m": time.Minute, "min": time.Minute, "h": time.Hour, "d": 24 * time.Hour}
	unit := time.Millisecond
	if m[2] != "" {
		u, ok := units[m[2]]
		if !ok {
			return 0, fmt.Errorf("%s\nInvalid suffix: %q", timeError, m[2])
		}
		unit = u
	}
	// TimeUnit.convert truncates toward zero; microseconds below 1ms become 0ms as in Spark.
	return (time.Duration(n) * unit).Truncate(time.Millisecond), nil
}
