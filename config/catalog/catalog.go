// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package catalog

import (
	"bytes"
	_ "embed"
)

//go:embed catalog.yaml
var catalogYAML []byte

// Name is the name of the embedded file, for messages.
const Name = "the built-in catalog (config/catalog/catalog.yaml)"

// YAML returns the catalog's documents, a copy that the caller may change.
func YAML() []byte { return bytes.Clone(catalogYAML) }
