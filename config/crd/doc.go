// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package crd embeds kquant's generated CustomResourceDefinitions
// (bases/*.yaml, written by `make manifests`), so that programs without an
// API server can apply exactly the defaults the API server applies, and
// check exactly its schema and CEL rules: the CRD is the one owner of every
// default and of every rule it states.
package crd
