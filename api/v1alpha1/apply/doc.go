// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package apply turns kquant's typed status values into the generated apply
// configurations (api/v1alpha1/applyconfiguration), so that every
// server-side apply is typed: the controller's and the agent's QuantRun
// status writes and the agent's GPUNodeProfile. Before, each writer encoded
// its own structs to JSON and maps by hand, which controller-runtime warns
// against (zero values become owned fields).
//
// A field the typed struct marks omitempty is set only when it is not zero;
// one it always serialises is always set, so that an apply says exactly what
// encoding the typed object would, and the round-trip test holds it to that.
//
// It also holds the table of which field manager owns which QuantRun status
// field (QuantRunStatusOwners), which docs/architecture.md repeats and each
// writer's tests check.
package apply
