package quantrecipe

import (
	"fmt"
	"math"
	"strconv"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
)

// Validate returns what is wrong with spec that admission cannot see, one
// message per problem, each naming its field.
func Validate(spec *kquantv1alpha1.QuantRecipeSpec) []string {
	var problems []string
	if spec.CurrentScaling != nil && spec.CurrentScaling.AmaxEpsilon != "" {
		// The CRD's pattern admits "1e999", which is no number TransformerEngine
		// can take: the amax floor must be finite.
		v, err := strconv.ParseFloat(spec.CurrentScaling.AmaxEpsilon, 64)
		if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
			problems = append(problems, fmt.Sprintf("spec.currentScaling.amaxEpsilon: %q is not a finite number", spec.CurrentScaling.AmaxEpsilon))
		}
	}
	e := spec.Effective()
	if e.Format == kquantv1alpha1.FormatE5M2 {
		problems = append(problems, "spec.format: E5M2 is not supported (TransformerEngine refuses pure E5M2 for every FP8 recipe)")
	}
	if (e.Scheme == kquantv1alpha1.SchemeNVFP4BlockScaling) != (e.Format == kquantv1alpha1.FormatE2M1) {
		problems = append(problems, fmt.Sprintf("spec.format: %s is not a format of %s", e.Format, e.Scheme))
	}
	return problems
}
