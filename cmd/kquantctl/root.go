// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/kquant/kquant/cmd/internal/version"
)

// rootCommand is the command tree: run and version work without a cluster,
// the others read one through the kubeconfig flags.
func (a *app) rootCommand() *cobra.Command {
	a.config = genericclioptions.NewConfigFlags(true)
	root := &cobra.Command{
		// The command's name is one word; kubectl's plugin shows its own.
		Use:         "kquantctl",
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: a.name},
		Short:       "kquant's command line: local runs of the engine, and a cluster's results",
		Long: a.name + ` runs kquant's quantization engine without a cluster ("run"), and reads
the QuantJobs and QuantRuns of a cluster ("get results", "compare", "export",
"describe run") with kubectl's kubeconfig flags. kquantctl and kubectl-kquant are
the same program.`,
		Version:       version.String("kquantctl"),
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("unknown command %q; see %s --help", args[0], a.name)
			}
			cmd.SetOut(a.stderr)
			_ = cmd.Usage()
			return usagef("no command given")
		},
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.SetIn(a.stdin)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	a.config.AddFlags(root.PersistentFlags())
	root.AddCommand(
		a.runCommand(),
		&cobra.Command{
			Use: "version", Short: "Print the version", Args: noArgs,
			Run: func(cmd *cobra.Command, _ []string) { fmt.Fprintln(a.stdout, version.String("kquantctl")) },
		},
		a.getCommand(),
		a.compareCommand(),
		a.exportCommand(),
		a.describeCommand(),
	)
	return root
}

// noArgs refuses positional arguments with a usage error.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("%s takes no arguments, got %q", cmd.CommandPath(), args)
	}
	return nil
}

// exactArgs wants n positional arguments, named in the command's Use.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usagef("usage: %s", cmd.UseLine())
		}
		return nil
	}
}

// oneOf is a flag value restricted to a few words, completed by the shell.
func oneOf(fs *pflag.FlagSet, cmd *cobra.Command, p *string, name, short, def, usage string, words ...string) {
	fs.StringVarP(p, name, short, def, usage)
	_ = cmd.RegisterFlagCompletionFunc(name, cobra.FixedCompletions(words, cobra.ShellCompDirectiveNoFileComp))
}
