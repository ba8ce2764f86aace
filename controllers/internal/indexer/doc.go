// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package indexer holds every field index the controllers use, its key and its
// extractor, registered once at start-up (as Kueue's indexer package). Hot paths
// list from the cache through these indexes instead of listing everything and
// filtering.
package indexer
