// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package logging

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/go-logr/logr"
)

// The verbosity ladder (see the package comment): logger.V(Debug).Info(...).
const (
	// Info is always logged: transitions and failures.
	Info = 0
	// Debug adds each decision and write.
	Debug = 1
	// Trace adds per-reconcile status details.
	Trace = 2
)

// Log formats.
const (
	FormatJSON = "json"
	FormatText = "text"
)

// Options are the logging flags of a binary.
type Options struct {
	// Format is FormatJSON or FormatText.
	Format string
	// Verbosity is the highest V level logged.
	Verbosity int
}

// AddFlags registers -v and --log-format on fs, with o's values as their
// defaults.
func (o *Options) AddFlags(fs *flag.FlagSet) {
	if o.Format == "" {
		o.Format = FormatJSON
	}
	fs.IntVar(&o.Verbosity, "v", o.Verbosity,
		fmt.Sprintf("log verbosity: %d transitions and failures, %d also each decision and write, %d also status details", Info, Debug, Trace))
	fs.StringVar(&o.Format, "log-format", o.Format, "log format: json or text")
}

// New returns the logger o describes, writing to w. logr's V(n) is slog's
// level -n, so that -v=n shows V(0) to V(n).
func (o Options) New(w io.Writer) (logr.Logger, error) {
	opts := &slog.HandlerOptions{Level: slog.Level(-o.Verbosity)}
	switch o.Format {
	case FormatJSON, "":
		return logr.FromSlogHandler(slog.NewJSONHandler(w, opts)), nil
	case FormatText:
		return logr.FromSlogHandler(slog.NewTextHandler(w, opts)), nil
	default:
		return logr.Discard(), fmt.Errorf("log format %q: want json or text", o.Format)
	}
}

// FromContext returns the logger in ctx, with keysAndValues added; a
// context without one discards.
func FromContext(ctx context.Context, keysAndValues ...any) logr.Logger {
	log := logr.FromContextOrDiscard(ctx)
	if len(keysAndValues) > 0 {
		log = log.WithValues(keysAndValues...)
	}
	return log
}

// IntoContext returns ctx carrying log.
func IntoContext(ctx context.Context, log logr.Logger) context.Context {
	return logr.NewContext(ctx, log)
}
