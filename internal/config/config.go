// Package config reads ckpt's configuration file: named contexts, each a set of defaults for the
// broker, the Kafka client options and the store endpoints (kubectl's contexts, Kafka's
// --command-config), so that they are not typed on every call. It also knows the environment
// variables that stand for the same settings. Precedence, highest first: the flag, the
// environment variable, the context, the built-in default (Resolve).
//
// The file is YAML, at $CKPT_CONFIG, else $XDG_CONFIG_HOME/ckpt/config.yaml, else
// ~/.config/ckpt/config.yaml:
//
//	current-context: prod
//	contexts:
//	  prod:
//	    bootstrap-server: kafka-1:9093,kafka-2:9093
//	    kafka-option-file: /etc/ckpt/prod-client.properties
//	    kafka-options: {security.protocol: SASL_SSL, sasl.mechanism: SCRAM-SHA-512}
//	    broker-timeout: 45s
//	    s3-endpoint: https://minio.internal:9000
//	    s3-region: eu-west-1
//	    s3-path-style: true
//	    store-timeout: 45s
//	    webhdfs-endpoint: http://namenode:9870
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// File is the configuration file.
type File struct {
	CurrentContext string              `yaml:"current-context,omitempty"`
	Contexts       map[string]*Context `yaml:"contexts,omitempty"`
}

// Context is one named set of defaults. Every field is optional.
type Context struct {
	BootstrapServer string            `yaml:"bootstrap-server,omitempty"`
	KafkaOptionFile string            `yaml:"kafka-option-file,omitempty"`
	KafkaOptions    map[string]string `yaml:"kafka-options,omitempty"`
	BrokerTimeout   string            `yaml:"broker-timeout,omitempty"`
	S3Endpoint      string            `yaml:"s3-endpoint,omitempty"`
	S3Region        string            `yaml:"s3-region,omitempty"`
	S3PathStyle     *bool             `yaml:"s3-path-style,omitempty"`
	S3Timeout       string            `yaml:"s3-timeout,omitempty"`
	StoreTimeout    string            `yaml:"store-timeout,omitempty"`
	WebHDFSEndpoint string            `yaml:"webhdfs-endpoint,omitempty"`
}

// Setting is one setting a context, a variable and a flag can give.
type Setting struct {
	// Flag is the command-line flag (without --).
	Flag string
	// Env is the environment variable, "" when there is none.
	Env string
	// Multi: the flag is repeatable and the context gives a map (kafka-options).
	Multi bool
}

// Settings lists every setting, in the order `ckpt config` shows them.
var Settings = []Setting{
	{Flag: "bootstrap-server", Env: "CKPT_BOOTSTRAP_SERVERS"},
	{Flag: "kafka-option-file", Env: "CKPT_KAFKA_OPTION_FILE"},
	{Flag: "kafka-option", Multi: true},
	{Flag: "broker-timeout", Env: "CKPT_BROKER_TIMEOUT"},
	{Flag: "s3-endpoint", Env: "AWS_ENDPOINT_URL"},
	{Flag: "s3-region", Env: "AWS_REGION"},
	{Flag: "s3-path-style", Env: "CKPT_S3_PATH_STYLE"},
	{Flag: "s3-timeout", Env: "CKPT_S3_TIMEOUT"},
	{Flag: "store-timeout", Env: "CKPT_STORE_TIMEOUT"},
	{Flag: "webhdfs-endpoint", Env: "CKPT_WEBHDFS_ENDPOINT"},
}

// Values are a context's settings by flag name (kafka-option: "key=value" entries, sorted).
func (c *Context) Values() map[string][]string {
	out := map[string][]string{}
	if c == nil {
		return out
	}
	one := func(flag, v string) {
		if v != "" {
			out[flag] = []string{v}
		}
	}
	one("bootstrap-server", c.BootstrapServer)
	one("kafka-option-file", c.KafkaOptionFile)
	one("broker-timeout", c.BrokerTimeout)
	one("s3-endpoint", c.S3Endpoint)
	one("s3-region", c.S3Region)
	if c.S3PathStyle != nil {
		one("s3-path-style", fmt.Sprint(*c.S3PathStyle))
	}
	one("s3-timeout", c.S3Timeout)
	one("store-timeout", c.StoreTimeout)
	one("webhdfs-endpoint", c.WebHDFSEndpoint)
	if len(c.KafkaOptions) > 0 {
		keys := make([]string, 0, len(c.KafkaOptions))
		for k := range c.KafkaOptions {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			out["kafka-option"] = append(out["kafka-option"], k+"="+c.KafkaOptions[k])
		}
	}
	return out
}

// Path is where the file is: $CKPT_CONFIG, else the XDG config directory's ckpt/config.yaml.
func Path(getenv func(string) string) string {
	if p := getenv("CKPT_CONFIG"); p != "" {
		return p
	}
	if x := getenv("XDG_CONFIG_HOME"); x != "" {
		return filepath.Join(x, "ckpt", "config.yaml")
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".config", "ckpt", "config.yaml")
	}
	return ""
}

// Load reads the file at path. A missing file is an empty configuration (nil error).
func Load(path string) (*File, error) {
	f := &File{}
	if path == "" {
		return f, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)                                            // a misspelt key is an error, not a setting silently ignored
	if err := dec.Decode(f); err != nil && !errors.Is(err, io.EOF) { // io.EOF: an empty file
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return f, nil
}

// Selected is the context in effect: name (the --context flag, else CKPT_CONTEXT, else the
// file's current-context) and where the name came from. An unknown name is an error.
func (f *File) Selected(flag string, getenv func(string) string) (string, *Context, string, error) {
	name, from := flag, "--context"
	if name == "" {
		name, from = getenv("CKPT_CONTEXT"), "CKPT_CONTEXT"
	}
	if name == "" {
		name, from = f.CurrentContext, "current-context"
	}
	if name == "" {
		return "", nil, "", nil
	}
	c, ok := f.Contexts[name]
	if !ok {
		return "", nil, "", fmt.Errorf("context %q (from %s) is not in the config file: contexts are %s", name, from, strings.Join(f.Names(), ", "))
	}
	return name, c, from, nil
}

// Names are the contexts' names, sorted.
func (f *File) Names() []string {
	out := make([]string, 0, len(f.Contexts))
	for n := range f.Contexts {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// SetCurrent rewrites current-context in the file at path, keeping the rest of it (comments
// included) as it is, through a temporary file renamed over it.
func SetCurrent(path, name string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config %s: %w", path, err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("config %s: %w", path, err)
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return fmt.Errorf("config %s: not a mapping of current-context and contexts", path)
	}
	m := doc.Content[0]
	set := false
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == "current-context" {
			m.Content[i+1].Value, m.Content[i+1].Tag, m.Content[i+1].Style = name, "!!str", 0
			set = true
		}
	}
	if !set {
		m.Content = append([]*yaml.Node{{Kind: yaml.ScalarNode, Value: "current-context"}, {Kind: yaml.ScalarNode, Value: name}}, m.Content...)
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b.Bytes(), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
