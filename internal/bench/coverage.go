// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"fmt"

	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/internal/measure"
	"github.com/kquant/kquant/internal/quant"
)

// backendFor returns the backend that runs spec with recipe and, when that is
// the reference standing in for e.Backend, the sentence that says why.
func (e *Engine) backendFor(spec *Spec, recipe quant.Recipe) (quant.Backend, string) {
	c, ok := e.Backend.(measure.Coverage)
	if !ok {
		return e.Backend, ""
	}
	roles := []quant.TensorRole{roleFromAPI(spec.Workload.TensorRole)}
	if spec.Workload.Operation == v1alpha1.OperationQuantizedLinear {
		roles = []quant.TensorRole{quant.Input, quant.Weight}
	}
	for _, role := range roles {
		if err := c.Covers(recipe, role); err != nil {
			return e.reference(), fmt.Sprintf("ran on the reference backend (CPU emulation): the %s backend cannot run it: %v", e.Backend.Name(), err)
		}
	}
	return e.Backend, ""
}
