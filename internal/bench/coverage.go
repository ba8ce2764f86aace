package bench

import (
	"fmt"

	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/internal/quant"
)

// Coverage is implemented by a backend that may run only some recipes: the
// CUDA backend, whose kernels now cover every recipe and option quant.Recipe
// expresses (MXFP8's 32x32 weight tiles were the last to fall back), keeps
// it for kernels yet to come. A run whose recipe the backend does not cover
// runs on the reference backend instead — emulated on the CPU, with
// results.backend saying so — rather than failing.
type Coverage interface {
	// Covers returns nil when the backend runs recipe for role, else an error
	// that says what it lacks.
	Covers(recipe quant.Recipe, role quant.TensorRole) error
}

// backendFor returns the backend that runs spec with recipe and, when that is
// the reference standing in for e.Backend, the sentence that says why.
func (e *Engine) backendFor(spec *Spec, recipe quant.Recipe) (quant.Backend, string) {
	c, ok := e.Backend.(Coverage)
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
