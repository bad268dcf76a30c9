//go:build tools

// Package deps pins modules that packages under construction will import.
package deps
import (
 _ "github.com/spf13/cobra"
 _ "github.com/charmbracelet/lipgloss"
 _ "github.com/charmbracelet/lipgloss/table"
 _ "github.com/aws/aws-sdk-go-v2/aws"
 _ "github.com/aws/aws-sdk-go-v2/config"
 _ "github.com/aws/aws-sdk-go-v2/credentials"
 _ "github.com/aws/aws-sdk-go-v2/service/s3"
 _ "github.com/aws/smithy-go"
 _ "github.com/twmb/franz-go/pkg/kgo"
 _ "github.com/twmb/franz-go/pkg/kadm"
 _ "github.com/twmb/franz-go/pkg/kfake"
 _ "github.com/rogpeppe/go-internal/testscript"
 _ "github.com/expr-lang/expr"
 _ "golang.org/x/term"
 _ "gopkg.in/yaml.v3"
 _ "github.com/google/uuid"
 _ "github.com/parquet-go/parquet-go"
 _ "github.com/creack/pty"
)
