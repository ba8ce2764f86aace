// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/kquant/kquant/cmd/internal/version"
	"github.com/kquant/kquant/internal/logging"
)

// rootCommand is the command tree: run and version work without a cluster,
// the others read one through the kubeconfig flags, which only they show.
func (a *app) rootCommand() *cobra.Command {
	a.config = genericclioptions.NewConfigFlags(true)
	var verbosity int
	root := &cobra.Command{
		// The command's name is one word; kubectl's plugin shows its own.
		Use:         "kquantctl",
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: a.name},
		Short:       "kquant's command line: local runs of the engine, and a cluster's results",
		Long: a.name + ` runs kquant's quantization engine without a cluster ("run"), and reads
the QuantJobs and QuantRuns of a cluster ("get results", "compare", "export",
"describe run") with kubectl's kubeconfig flags. kquantctl and kubectl-kquant are
the same program.`,
		Example: a.examples(`
# Run a validation job locally, on this machine's GPU or the reference backend
{name} run -f recipes/mxfp8.yaml -f config/samples/validation-quantize.yaml

# The results of a job in the cluster, one row per GPU
{name} get results mxfp8-check`),
		Version:       version.String("kquantctl"),
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.ArbitraryArgs,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			// -v is the log verbosity, as kubectl's: the cluster commands
			// say what they list and what they could not read.
			log, err := logging.Options{Format: logging.FormatText, Verbosity: verbosity}.New(a.stderr)
			if err != nil {
				return err
			}
			cmd.SetContext(logging.IntoContext(cmd.Context(), log))
			return nil
		},
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
	// --version without -v: -v is the verbosity, as in kubectl.
	root.Flags().Bool("version", false, "print the version and exit")
	root.PersistentFlags().IntVarP(&verbosity, "v", "v", 0,
		fmt.Sprintf("log verbosity: %d also what the cluster commands list and skip", logging.Debug))
	root.AddCommand(
		a.runCommand(),
		&cobra.Command{
			Use: "version", Short: "Print the version", Args: noArgs,
			Example: a.examples(`
{name} version`),
			Run: func(cmd *cobra.Command, _ []string) { fmt.Fprintln(a.stdout, version.String("kquantctl")) },
		},
		a.getCommand(),
		a.compareCommand(),
		a.exportCommand(),
		a.describeCommand(),
	)
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			c.Example = a.examples(`
# Load completion into this bash session
source <({name} completion bash)`)
			for _, sub := range c.Commands() {
				sub.Example = a.examples(fmt.Sprintf(`
{name} completion %s`, sub.Name()))
			}
		}
	}
	return root
}

// examples is an Examples: section with {name} as the program is called
// ("kquantctl" or "kubectl kquant"), indented as kubectl's are.
func (a *app) examples(s string) string {
	lines := strings.Split(strings.TrimPrefix(s, "\n"), "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = "  " + strings.ReplaceAll(l, "{name}", a.name)
		}
	}
	return strings.Join(lines, "\n")
}

// clusterFlags adds kubectl's kubeconfig flags (--kubeconfig, --context,
// -n, ...) to a command that reads the cluster, and only to those; its help
// lists them in a section of their own, after the command's own flags.
func (a *app) clusterFlags(cmd *cobra.Command) {
	kubeconfig := pflag.NewFlagSet("kubeconfig", pflag.ContinueOnError)
	a.config.AddFlags(kubeconfig)
	cmd.Flags().AddFlagSet(kubeconfig)
	usage := cmd.UsageFunc()
	cmd.SetUsageFunc(func(c *cobra.Command) error {
		setHidden(kubeconfig, true)
		err := usage(c)
		setHidden(kubeconfig, false)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(c.OutOrStderr(), "\nKubeconfig Flags (kubectl's):\n%s", kubeconfig.FlagUsages())
		return err
	})
}

// setHidden hides or shows every flag of fs (in every flag set that shares
// them).
func setHidden(fs *pflag.FlagSet, hidden bool) {
	fs.VisitAll(func(f *pflag.Flag) { f.Hidden = hidden })
}

// selectionFlags adds -A and -l to a command that lists runs.
func selectionFlags(cmd *cobra.Command, sel *selection) {
	cmd.Flags().BoolVarP(&sel.allNamespaces, "all-namespaces", "A", false, "list the runs of every namespace; -n is ignored")
	cmd.Flags().StringVarP(&sel.labels, "selector", "l", "", "only the runs with these labels (kubectl's syntax: -l key=value,key2!=value2); every run carries kquant.dev/job=JOB")
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

// maxArgs wants at most n positional arguments.
func maxArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) > n {
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

// failOnFlag adds --fail-on, whose exit code 3 is run's.
func failOnFlag(cmd *cobra.Command, p *string, what string) {
	oneOf(cmd.Flags(), cmd, p, "fail-on", "", "fail", "exit 3 when "+what+" has this verdict or worse: fail, warn or never", "fail", "warn", "never")
}

// checkFailOn refuses a --fail-on value that is not a level.
func checkFailOn(level string) error {
	if level != "fail" && level != "warn" && level != "never" {
		return usagef("--fail-on %q: want fail, warn or never", level)
	}
	return nil
}
